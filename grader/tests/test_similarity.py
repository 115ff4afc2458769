"""grader similarity: copies disguised by renaming, reordering and comments rank above
honest pairs; skeleton code never counts; the reference is found; a class of 200 is fast."""

from __future__ import annotations

import csv
import io
import random
import re
import shutil
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from grader import cli
from grader.instructor import similarity

KIT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
VECTOR_ADD = (CORPUS / "correct" / "labs" / "vectorAdd" / "vectorAdd.cu").read_text()
REDUCTION = (CORPUS / "correct_reduction" / "labs" / "reduction" / "reduction.cu").read_text()
SKELETON = {lab: (KIT / "labs" / lab / f"{lab}.cu").read_text() for lab in ("vectorAdd", "reduction")}

# Honest vectorAdd solutions: the same lecture steps, written independently.
HONEST_VECTOR_ADD = [
    """#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "vectorAdd.h"

__global__ void add_one(const float* x, const float* y, float* out, int count) {
  int idx = threadIdx.x + blockIdx.x * blockDim.x;
  if (idx >= count) return;
  out[idx] = x[idx] + y[idx];
}

__global__ void add_stride(const float* x, const float* y, float* out, int count) {
  for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < count; idx += blockDim.x * gridDim.x)
    out[idx] = x[idx] + y[idx];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n < 1) return;
  int grid = n / 128 + (n % 128 != 0);
  add_one<<<grid, 128>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
""",
    """#include "lab/cuda_check.h"
#include "vectorAdd.h"

namespace {
constexpr int kBlock = 512;

__global__ void kernel_grid_stride(const float* __restrict__ lhs, const float* __restrict__ rhs,
                                   float* __restrict__ sum, int len) {
  const int stride = gridDim.x * blockDim.x;
  int k = blockDim.x * blockIdx.x + threadIdx.x;
  while (k < len) {
    sum[k] = lhs[k] + rhs[k];
    k += stride;
  }
}
}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) { return; }
  int blocks = (n + kBlock - 1) / kBlock;
  if (blocks > 4096) blocks = 4096;
  kernel_grid_stride<<<blocks, kBlock>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
""",
    """#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vadd4(const float4* a, const float4* b, float4* c, int quads) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < quads) {
    float4 p = a[t], q = b[t];
    c[t] = make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
  }
}

__global__ void vadd_tail(const float* a, const float* b, float* c, int from, int n) {
  int t = from + threadIdx.x;
  if (t < n) c[t] = a[t] + b[t];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  int quads = n / 4;
  if (quads > 0)
    vadd4<<<(quads + 255) / 256, 256>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
                                        reinterpret_cast<float4*>(c), quads);
  if (n % 4) vadd_tail<<<1, 4>>>(a, b, c, quads * 4, n);
  LAB_CHECK_LAUNCH();
}
""",
    """#include "lab/cuda_check.h"
#include "vectorAdd.h"

// Each thread handles two elements, half a grid apart.
__global__ void add_pairs(const float* a, const float* b, float* c, int n) {
  unsigned i = blockIdx.x * blockDim.x * 2u + threadIdx.x;
  if (i < (unsigned)n) c[i] = a[i] + b[i];
  unsigned j = i + blockDim.x;
  if (j < (unsigned)n) c[j] = b[j] + a[j];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n == 0) return;
  const unsigned per_block = 2 * 256;
  unsigned g = (unsigned(n) + per_block - 1) / per_block;
  add_pairs<<<g, 256>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
""",
]


def disguise(text: str, seed: int) -> str:
    """A copy as a student hides it: names changed, functions reordered, comments and blank lines added."""
    rng = random.Random(seed)
    names = sorted(set(re.findall(r"\b[a-z_][a-z0-9_]*\b", re.sub(r'"[^"\n]*"', "", text))) - similarity.KEYWORDS
                   - {"include", "return", "if", "for", "const", "int", "float", "void"})
    mapping = {name: f"v{rng.randrange(10**6)}_{name[::-1]}" for name in names if len(name) > 1}
    text = re.sub(r"\b[a-z_][a-z0-9_]*\b", lambda m: mapping.get(m.group(), m.group()), text)
    # Split into top-level chunks at blank lines and reverse the function order (includes stay first).
    head = [c for c in text.split("\n\n") if c.lstrip().startswith("#include")]
    rest = [c for c in text.split("\n\n") if not c.lstrip().startswith("#include")]
    rest.reverse()
    out = []
    for line in "\n\n".join(head + rest).splitlines():
        out.append("   " + line.replace(" ", "  ") + ("   // my own work" if rng.random() < 0.3 else ""))
        if rng.random() < 0.2:
            out.append("/* step: " + "x" * rng.randrange(40) + " */")
    return "\n".join(out) + "\n"


class Class:
    """A generated class on disk: a roster and one submission folder per student."""

    def __init__(self, root: Path):
        self.root = root
        self.rows: list[tuple[str, str]] = []

    def add(self, student: str, files: dict[str, str] | None) -> None:
        folder = self.root / "subs" / student
        if files is not None:
            for lab, text in files.items():
                path = folder / "labs" / lab / f"{lab}.cu"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        self.rows.append((student, str(folder)))

    def roster(self) -> Path:
        path = self.root / "roster.csv"
        path.write_text("student,path\n" + "".join(f"{s},{p}\n" for s, p in self.rows))
        return path


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["similarity", *argv])
    return code, out.getvalue(), err.getvalue()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


class TokenizerTest(unittest.TestCase):
    def test_names_literals_comments_and_layout_do_not_matter(self):
        a = "int total = 0; // sum\nfor (int i = 0; i < n; ++i) total += x[i] * 2.5f;\n"
        b = "int   acc=7;/* x */ for(int j=1;j<len;++j)\n  acc+=values[j]*1e3;"
        self.assertEqual([t for t, _ in similarity.tokenize(a)], [t for t, _ in similarity.tokenize(b)])

    def test_keywords_and_operators_stay(self):
        a = [t for t, _ in similarity.tokenize("if (i < n) c[i] = a[i] + b[i];")]
        b = [t for t, _ in similarity.tokenize("while (i < n) c[i] = a[i] - b[i];")]
        self.assertNotEqual(a, b)
        self.assertIn("threadIdx", [t for t, _ in similarity.tokenize("threadIdx.x")])

    def test_empty_statements_do_not_break_a_copy(self):
        a = [t for t, _ in similarity.tokenize("x = a[i];\ny = b[i];")]
        b = [t for t, _ in similarity.tokenize("x = a[i];;;\n;y = b[i];;")]
        self.assertEqual(a, b)

    def test_strings_and_comment_markers_inside_them(self):
        tokens = similarity.tokenize('printf("// not a comment /*"); x = 1; /* real\ncomment */ y = 2;')
        self.assertEqual([t for t, _ in tokens][:5], ["I", "(", "S", ")", ";"])
        self.assertEqual(tokens[-1][1], 2)  # lines counted across the block comment

    def test_winnowing_keeps_a_fingerprint_in_every_window(self):
        hashes = [random.Random(3).randrange(1000) for _ in range(200)]
        chosen = similarity.winnow(hashes, 5)
        for start in range(len(hashes) - 4):
            self.assertTrue(any(start <= p < start + 5 for p in chosen), start)


class SimilarityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="similarity-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.cls = Class(self.tmp)

    def test_disguised_copies_rank_above_honest_pairs(self):
        cls = self.cls
        cls.add("orig_va", {"vectorAdd": VECTOR_ADD, "reduction": REDUCTION})
        cls.add("copy_va1", {"vectorAdd": disguise(VECTOR_ADD, 1), "reduction": disguise(REDUCTION, 11)})
        cls.add("copy_va2", {"vectorAdd": disguise(VECTOR_ADD, 2)})
        for i, text in enumerate(HONEST_VECTOR_ADD):
            cls.add(f"honest{i}", {"vectorAdd": text})
        code, out, err = run([str(cls.roster()), "--out", str(self.tmp / "out"), "--labs", "vectorAdd", "reduction"])
        self.assertEqual(code, 0, err)
        rows = read_csv(self.tmp / "out" / "similarity.csv")
        copies = {frozenset(p) for p in [("orig_va", "copy_va1"), ("orig_va", "copy_va2"), ("copy_va1", "copy_va2")]}
        score = {(r["lab"], frozenset((r["a"], r["b"]))): float(r["score"]) for r in rows}
        copy_scores = [score.get(("vectorAdd", p), 0.0) for p in copies]
        copy_scores.append(score.get(("reduction", frozenset(("orig_va", "copy_va1"))), 0.0))
        honest = [s for (lab, p), s in score.items() if lab == "vectorAdd" and p not in copies]
        self.assertGreaterEqual(min(copy_scores), 0.75, rows)  # reordering cuts the k-grams at the seams
        self.assertTrue(honest, "honest pairs share some code (the index line) and are listed")
        self.assertGreater(min(copy_scores), max(honest), rows)
        # Ranked: the copies come first.
        top = [frozenset((r["a"], r["b"])) for r in rows if r["lab"] == "vectorAdd"][:3]
        self.assertEqual(set(top), copies)
        self.assertTrue(all(r["lines_a"] for r in rows[:3]), "matched lines are given")

    def test_skeleton_only_submissions_score_nothing(self):
        skeleton = SKELETON["vectorAdd"]
        self.cls.add("lazy1", {"vectorAdd": skeleton})
        self.cls.add("lazy2", {"vectorAdd": disguise(skeleton, 5)})
        self.cls.add("lazy3", {"vectorAdd": skeleton + "\n// started\n"})
        self.cls.add("worker", {"vectorAdd": VECTOR_ADD})
        code, out, _ = run([str(self.cls.roster()), "--out", str(self.tmp / "out"), "--labs", "vectorAdd"])
        self.assertEqual(code, 0)
        rows = read_csv(self.tmp / "out" / "similarity.csv")
        lazy = {"lazy1", "lazy2", "lazy3"}
        self.assertFalse([r for r in rows if r["a"] in lazy or r["b"] in lazy], rows)
        self.assertIn("nothing beyond the skeleton", out)

    def test_a_copy_of_the_reference_is_flagged(self):
        reference = (KIT / "solutions" / "vectorAdd" / "vectorAdd.cu").read_text()
        self.cls.add("leaked", {"vectorAdd": disguise(reference, 9)})
        self.cls.add("own", {"vectorAdd": HONEST_VECTOR_ADD[1]})
        code, _, err = run([str(self.cls.roster()), "--out", str(self.tmp / "out"), "--labs", "vectorAdd",
                            "--reference"])
        self.assertEqual(code, 0, err)
        rows = read_csv(self.tmp / "out" / "similarity.csv")
        self.assertEqual((rows[0]["a"], rows[0]["b"]), ("leaked", similarity.REFERENCE))
        self.assertGreaterEqual(float(rows[0]["score"]), 0.75)
        own = [r for r in rows if r["a"] == "own" and r["b"] == similarity.REFERENCE]
        self.assertTrue(not own or float(own[0]["score"]) < 0.5, own)

    def test_missing_and_unreadable_files_are_reported_per_student(self):
        self.cls.add("ok1", {"vectorAdd": VECTOR_ADD})
        self.cls.add("ok2", {"vectorAdd": disguise(VECTOR_ADD, 4)})
        self.cls.add("nofolder", None)
        self.cls.add("nofile", {})
        (self.tmp / "subs" / "nofile").mkdir(parents=True)
        self.cls.add("binary", {"vectorAdd": ""})
        (self.tmp / "subs" / "binary" / "labs" / "vectorAdd" / "vectorAdd.cu").write_bytes(b"\xff\xfe\x00" * 100)
        self.cls.add("isdir", {})
        (self.tmp / "subs" / "isdir" / "labs" / "vectorAdd" / "vectorAdd.cu").mkdir(parents=True)
        code, out, err = run([str(self.cls.roster()), "--out", str(self.tmp / "out"), "--labs", "vectorAdd"])
        self.assertEqual(code, 0, err)
        self.assertNotIn("Traceback", out + err)
        for student in ("nofolder", "nofile", "isdir"):
            self.assertIn(student, out)
        page = (self.tmp / "out" / "similarity.html").read_text()
        self.assertIn("nofolder", page)
        self.assertEqual(read_csv(self.tmp / "out" / "similarity.csv")[0]["a"], "ok1")

    def test_student_text_is_escaped_in_the_page(self):
        evil = VECTOR_ADD + '\n// </pre><script>alert(1)</script>\nconst char* s = "<img src=x onerror=1>";\n'
        self.cls.add("a", {"vectorAdd": evil})
        self.cls.add("b", {"vectorAdd": evil})
        code, _, err = run([str(self.cls.roster()), "--out", str(self.tmp / "out"), "--labs", "vectorAdd"])
        self.assertEqual(code, 0, err)
        page = (self.tmp / "out" / "similarity.html").read_text()
        self.assertNotIn("<script", page)
        self.assertNotIn("<img", page)
        self.assertIn("&lt;script&gt;", page)
        self.assertIn('class="m"', page)  # matched lines are marked

    def test_usage_errors_exit_2_with_one_line(self):
        roster = self.cls.roster()
        for argv in ([str(self.tmp / "absent.csv"), "--out", str(self.tmp / "o")],
                     [str(roster), "--out", str(self.tmp / "o"), "--labs", "vectorAd"],
                     [str(roster)],
                     [str(roster), "--out", str(self.tmp / "o"), "--kit", str(self.tmp)]):
            code, out, err = run(argv)
            self.assertEqual(code, 2, argv)
            self.assertNotIn("Traceback", err)
        (self.tmp / "bad.csv").write_text("name,where\nx,y\n")
        code, _, err = run([str(self.tmp / "bad.csv"), "--out", str(self.tmp / "o")])
        self.assertEqual(code, 2)
        self.assertIn("student,path", err)

    def test_a_class_of_200_in_under_a_minute(self):
        rng = random.Random(7)
        for i in range(200):
            if i % 20 == 0:
                files = {"vectorAdd": disguise(VECTOR_ADD, i), "reduction": disguise(REDUCTION, i)}
            else:
                files = {"vectorAdd": disguise(HONEST_VECTOR_ADD[i % 4], i),
                         "reduction": disguise(REDUCTION, i) if i % 7 == 0 else SKELETON["reduction"]}
                files["reduction"] += "\n".join(f"int pad{i}_{j} = {rng.randrange(99)} + {j};" for j in range(20))
            self.cls.add(f"s{i:03d}", files)
        start = time.monotonic()
        code, _, err = run([str(self.cls.roster()), "--out", str(self.tmp / "out"), "--labs", "vectorAdd",
                            "reduction", "--reference"])
        elapsed = time.monotonic() - start
        self.assertEqual(code, 0, err)
        self.assertLess(elapsed, 60.0)
        self.assertGreater(len(read_csv(self.tmp / "out" / "similarity.csv")), 1000)


if __name__ == "__main__":
    unittest.main()
