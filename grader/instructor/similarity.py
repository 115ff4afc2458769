"""Code similarity of a class's submissions (grader similarity), as MOSS measures it.

    python3 -m grader similarity ROSTER --out DIR [--labs LAB ...] [--reference] [--kit DIR]

Each student's files of a lab (the lab's "editable" files, labs/<lab>/<lab>.cu) become
a stream of normalised tokens: every identifier is one token class, every number,
string and character literal its class, comments, whitespace and the preprocessor's
line breaks are dropped; keywords, CUDA's built-in names and operators stay. Renaming
variables, adding comments or reflowing code therefore changes nothing. Hashes of every
K tokens in a row (k-grams) are winnowed (the minimum hash of each window of W k-grams
is kept, as MOSS does), which keeps a copied run of code found however the functions
are ordered. Every k-gram of the skeleton (the kit's labs/<lab>/<lab>.cu) is removed
first: code the kit handed out never counts. A pair's score is the share of the smaller
submission's fingerprints that the other one also has; with --reference each
submission is also compared with the reference solution (solutions/<lab>/*.cu).

Writes DIR/similarity.csv (every pair that shares a fingerprint, highest score first)
and DIR/similarity.html (the ranked table, and the top pairs side by side with the
matched lines marked). No GPU, no build. Exit status: 0 written, 2 usage (bad roster,
kit or lab names; one line on stderr).

A score is a lead to read the two files, not a verdict: small labs leave little room,
and two honest solutions of a short kernel share much of it.
"""

from __future__ import annotations

import argparse
import csv
import html
import re
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from grader import manifest
from grader.instructor.gradebook import RosterError, read_roster

EXIT_OK, EXIT_USAGE = 0, 2
KIT_ROOT = Path(__file__).resolve().parents[2]
K = 12  # tokens per k-gram: a copied run shorter than this is never seen
W = 6  # k-grams per winnowing window: any shared run of K + W - 1 tokens is always found
MAX_BYTES = 1 << 20  # per file: more is cut (a huge file would only slow the comparison)
SIDE_BY_SIDE = 20  # pairs shown side by side in the HTML
TABLE_ROWS = 500  # rows of the HTML table (the CSV has them all)
REFERENCE = "(reference)"

KEYWORDS = frozenset("""
alignas alignof asm auto bool break case catch char char16_t char32_t char8_t class const constexpr
consteval constinit const_cast continue decltype default delete do double dynamic_cast else enum
explicit extern false float for friend goto if inline int long mutable namespace new noexcept
nullptr operator private protected public register reinterpret_cast return short signed sizeof
static static_assert static_cast struct switch template this thread_local throw true try typedef
typeid typename union unsigned using virtual void volatile wchar_t while size_t
__global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ __forceinline__
__noinline__ __launch_bounds__ __syncthreads __syncwarp __shfl_sync __shfl_down_sync __shfl_up_sync
__shfl_xor_sync __ballot_sync __any_sync __all_sync __activemask __popc __clz __ffs __threadfence
__ldg threadIdx blockIdx blockDim gridDim warpSize atomicAdd atomicSub atomicMax atomicMin atomicCAS
atomicExch atomicAnd atomicOr atomicInc cudaMalloc cudaFree cudaMemcpy cudaMemcpyAsync cudaMemset
cudaMallocHost cudaFreeHost cudaHostAlloc cudaEventCreate cudaEventRecord cudaEventSynchronize
cudaEventElapsedTime cudaEventDestroy cudaStreamSynchronize cudaDeviceSynchronize cudaGetLastError
cudaSuccess cudaMemcpyHostToDevice cudaMemcpyDeviceToHost cudaMemcpyDeviceToDevice float2 float4 int2
int4 uint32_t uint64_t int32_t int64_t uint8_t
""".split())

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<pp>\#[ \t]*(?:include|pragma|define|undef|if|ifdef|ifndef|elif|else|endif|error|line)\b)
  | (?P<string>(?:u8|[uUL])?R"(?P<delim>[^\s()\\]{0,16})\(.*?(?:\)(?P=delim)"|\Z)
               |(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*"?)
  | (?P<char>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*'?)
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.']|)*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><<=|>>=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~=<>]=?|[()\[\]{};,.?:])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)


def tokenize(text: str) -> list[tuple[str, int]]:
    """The normalised tokens of C/C++/CUDA source, each with its 1-based line."""
    tokens: list[tuple[str, int]] = []
    line = 1
    for match in _TOKEN.finditer(text):
        kind, lexeme = match.lastgroup, match.group()
        if kind == "delim":  # the raw string's delimiter group: the whole match is the string
            kind = "string"
        if kind not in ("ws", "comment"):
            if kind == "ident":
                token = lexeme if lexeme in KEYWORDS else "I"
            elif kind == "pp":
                token = "#" + lexeme.lstrip("#").strip()
            elif kind == "op" or kind == "other":
                token = lexeme
            else:
                token = {"string": "S", "char": "C", "number": "N"}[kind]
            if not (token == ";" and tokens and tokens[-1][0] in (";", "{", "}")):  # empty statements: padding
                tokens.append((token, line))
        line += lexeme.count("\n")
    return tokens


def kgram_hashes(tokens: list[str], k: int = K) -> list[int]:
    """The hash of every k tokens in a row (a stable hash: the same on every run)."""
    codes = [zlib.crc32(t.encode()) for t in tokens]
    out = []
    for i in range(len(codes) - k + 1):
        out.append(zlib.crc32(b"".join(c.to_bytes(4, "little") for c in codes[i:i + k])))
    return out


def winnow(hashes: list[int], w: int = W) -> list[int]:
    """Positions of the winnowed hashes: the rightmost minimum of each window of w."""
    if not hashes:
        return []
    if len(hashes) <= w:
        return [min(range(len(hashes)), key=lambda i: (hashes[i], -i))]
    chosen: list[int] = []
    for start in range(len(hashes) - w + 1):
        window = hashes[start:start + w]
        low = min(window)
        pos = start + w - 1 - window[::-1].index(low)
        if not chosen or chosen[-1] != pos:
            chosen.append(pos)
    return chosen


@dataclass
class Source:
    """One submission of one lab (or the reference): its files and fingerprints."""

    name: str
    files: list[tuple[str, str]] = field(default_factory=list)  # (path in the kit, text)
    # fingerprint -> [(file index, first line, last line)] of the k-grams that gave it
    where: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    skeleton_only: int = 0  # fingerprints dropped because the skeleton has them

    @property
    def prints(self) -> set[int]:
        return set(self.where)


def fingerprint(source: Source, skeleton: set[int]) -> None:
    """Fill source.where from its files, leaving out every k-gram of the skeleton."""
    dropped = set()
    for index, (_, text) in enumerate(source.files):
        tokens = tokenize(text)
        hashes = kgram_hashes([t for t, _ in tokens])
        for pos in winnow(hashes):
            value = hashes[pos]
            if value in skeleton:
                dropped.add(value)
                continue
            source.where.setdefault(value, []).append((index, tokens[pos][1], tokens[pos + K - 1][1]))
    source.skeleton_only = len(dropped)


def all_kgrams(texts: list[str]) -> set[int]:
    """Every k-gram hash of these files (the skeleton: all of it is excluded, not only its winnowed part)."""
    out: set[int] = set()
    for text in texts:
        out.update(kgram_hashes([t for t, _ in tokenize(text)]))
    return out


@dataclass
class Pair:
    lab: str
    a: Source
    b: Source
    shared: set[int]

    @property
    def score(self) -> float:
        smaller = min(len(self.a.where), len(self.b.where))
        return len(self.shared) / smaller if smaller else 0.0

    @property
    def jaccard(self) -> float:
        union = len(self.a.where) + len(self.b.where) - len(self.shared)
        return len(self.shared) / union if union else 0.0

    def lines(self, side: Source) -> dict[int, set[int]]:
        """file index -> lines of `side` covered by the shared fingerprints."""
        out: dict[int, set[int]] = {}
        for value in self.shared:
            for index, first, last in side.where.get(value, []):
                out.setdefault(index, set()).update(range(first, last + 1))
        return out


def compare(lab: str, sources: list[Source], reference: Source | None) -> list[Pair]:
    """Every pair of `sources` sharing a fingerprint, and each with the reference, best first.

    An inverted index (fingerprint -> submissions) finds the pairs that share anything;
    only those are intersected."""
    index: dict[int, list[int]] = {}
    for i, source in enumerate(sources):
        for value in source.where:
            index.setdefault(value, []).append(i)
    candidates: set[tuple[int, int]] = set()
    for holders in index.values():
        if len(holders) > 1:
            for x in range(len(holders)):
                for y in range(x + 1, len(holders)):
                    candidates.add((holders[x], holders[y]))
    pairs = [Pair(lab, sources[i], sources[j], sources[i].prints & sources[j].prints) for i, j in candidates]
    if reference is not None and reference.where:
        ref = reference.prints
        for source in sources:
            shared = source.prints & ref
            if shared:
                pairs.append(Pair(lab, source, reference, shared))
    return pairs


def rank(pairs: list[Pair]) -> list[Pair]:
    """Highest score first; of equal scores, the pair sharing more first."""
    return sorted(pairs, key=lambda p: (-p.score, -len(p.shared), p.lab, p.a.name, p.b.name))


def _ranges(lines: dict[int, set[int]], files: list[tuple[str, str]]) -> str:
    """'12-18,30' (with the file's name first when a lab has several files)."""
    parts = []
    for index in sorted(lines):
        spans, run = [], []
        for n in sorted(lines[index]):
            if run and n == run[-1] + 1:
                run.append(n)
            else:
                if run:
                    spans.append(run)
                run = [n]
        if run:
            spans.append(run)
        text = ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in spans)
        parts.append(text if len(files) == 1 else f"{Path(files[index][0]).name}:{text}")
    return " ".join(parts)


# --- reading a class -------------------------------------------------------------------------

def read_files(root: Path, paths: tuple[str, ...]) -> tuple[list[tuple[str, str]], list[str]]:
    """The texts of `paths` under `root`, and what was wrong with any (missing, unreadable, cut)."""
    files, problems = [], []
    for rel in paths:
        path = root / rel
        try:
            if path.is_symlink() or not path.is_file():
                problems.append(f"no {rel}" if not path.is_symlink() else f"{rel} is a link (not compared)")
                continue
            with path.open("rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            problems.append(f"cannot read {rel}: {exc.strerror or exc}")
            continue
        if len(data) > MAX_BYTES:
            problems.append(f"{rel} is over {MAX_BYTES >> 20} MiB: only its first MiB compared")
            data = data[:MAX_BYTES]
        files.append((rel, data.decode("utf-8", errors="replace")))
    return files, problems


def reference_files(kit: Path, lab: str) -> list[tuple[str, str]]:
    folder = kit / "solutions" / lab
    files, _ = read_files(kit, tuple(f"solutions/{lab}/{p.name}" for p in sorted(folder.glob("*.cu"))))
    return files


# --- writing the results -------------------------------------------------------------------

CSV_HEADER = ["lab", "a", "b", "score", "jaccard", "shared", "fingerprints_a", "fingerprints_b",
              "lines_a", "lines_b"]


def write_csv(path: Path, ranked: list[Pair]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_HEADER)
        for p in ranked:
            writer.writerow([p.lab, p.a.name, p.b.name, f"{p.score:.3f}", f"{p.jaccard:.3f}", len(p.shared),
                             len(p.a.where), len(p.b.where), _ranges(p.lines(p.a), p.a.files),
                             _ranges(p.lines(p.b), p.b.files)])


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:1240px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#eee}td.n{text-align:right}.hi{background:#fde2e2}
.pair{display:flex;gap:8px;margin-bottom:2em}.side{flex:1;min-width:0;overflow-x:auto;border:1px solid #ccc}
.side h4{margin:0;padding:4px 8px;background:#eee;font-size:13px}
pre{margin:0;font:12px/1.35 ui-monospace,monospace}pre span{display:block;white-space:pre}
pre span.m{background:#ffd6d6}pre i{color:#999;font-style:normal;display:inline-block;width:3.5em;user-select:none}
ul.notes li{margin:2px 0}@media print{.side{overflow:visible}pre span{white-space:pre-wrap}}
"""


def _listing(source: Source, marked: dict[int, set[int]]) -> str:
    out = []
    for index, (rel, text) in enumerate(source.files):
        lines = marked.get(index, set())
        out.append(f"<h4>{html.escape(source.name)}: {html.escape(rel)}</h4><pre>")
        for n, line in enumerate(text.splitlines(), start=1):
            cls = ' class="m"' if n in lines else ""
            out.append(f"<span{cls}><i>{n}</i>{html.escape(line)}</span>")
        out.append("</pre>")
    return "".join(out)


def write_html(path: Path, ranked: list[Pair], notes: list[str], labs: list[str], counts: dict[str, int]) -> None:
    esc = html.escape
    parts = ["<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Code similarity</title>",
             f"<style>{_CSS}</style></head><body><h1>Code similarity</h1>",
             "<p>Submissions compared on normalised tokens (names, literals, comments and layout do not "
             f"matter), winnowed {K}-token fingerprints; code of the skeleton never counts. "
             "<b>score</b>: the share of the smaller submission's fingerprints the other one also has. "
             "A high score is a reason to read both files, not a finding: short labs leave little room, "
             "and honest solutions of a short kernel share much of it.</p>",
             "<p>" + esc(", ".join(f"{lab}: {counts.get(lab, 0)} submissions" for lab in labs)) + "</p>"]
    if notes:
        parts.append("<h2>Not compared</h2><ul class=notes>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append(f"<h2>Pairs, highest score first</h2><p>{len(ranked)} pairs share code"
                 + (f"; the first {TABLE_ROWS} are shown (all are in similarity.csv)" if len(ranked) > TABLE_ROWS else "")
                 + ".</p><table><tr><th>#</th><th>lab</th><th>a</th><th>b</th><th>score</th><th>shared</th>"
                 "<th>lines of a</th><th>lines of b</th></tr>")
    for i, p in enumerate(ranked[:TABLE_ROWS], start=1):
        link = f'<a href="#p{i}">{i}</a>' if i <= SIDE_BY_SIDE else str(i)
        cls = ' class="hi"' if p.score >= 0.8 else ""
        parts.append(f"<tr{cls}><td class=n>{link}</td><td>{esc(p.lab)}</td><td>{esc(p.a.name)}</td>"
                     f"<td>{esc(p.b.name)}</td><td class=n>{p.score:.2f}</td><td class=n>{len(p.shared)}</td>"
                     f"<td>{esc(_ranges(p.lines(p.a), p.a.files))}</td><td>{esc(_ranges(p.lines(p.b), p.b.files))}</td></tr>")
    parts.append("</table>")
    for i, p in enumerate(ranked[:SIDE_BY_SIDE], start=1):
        parts.append(f'<h3 id="p{i}">{i}. {esc(p.lab)}: {esc(p.a.name)} and {esc(p.b.name)}, score {p.score:.2f} '
                     f"({len(p.shared)} shared fingerprints; matched lines marked)</h3><div class=pair>"
                     f"<div class=side>{_listing(p.a, p.lines(p.a))}</div>"
                     f"<div class=side>{_listing(p.b, p.lines(p.b))}</div></div>")
    parts.append("</body></html>\n")
    path.write_text("".join(parts), encoding="utf-8")


# --- the command ---------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m grader similarity",
                                     description="Rank every pair of a class's submissions by code similarity "
                                                 "(MOSS-style winnowed fingerprints; no GPU needed).",
                                     epilog="exit status: 0 written, 2 usage error")
    parser.add_argument("roster", type=Path, help="CSV file with the columns student,path (as for batch)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="where similarity.csv and similarity.html go")
    parser.add_argument("--labs", nargs="+", metavar="LAB", help="labs to compare (default: every lab of the kit)")
    parser.add_argument("--reference", action="store_true",
                        help="also compare each submission with the reference solution (solutions/<lab>/*.cu)")
    parser.add_argument("--kit", type=Path, metavar="DIR",
                        help="the kit whose skeletons (and solutions) are used (default: this kit)")
    return parser


def run(entries, kit: Path, labs: list[manifest.Lab], with_reference: bool) -> tuple[list[Pair], list[str], dict[str, int]]:
    ranked: list[Pair] = []
    notes: list[str] = []
    counts: dict[str, int] = {}
    for lab in labs:
        skeleton_files, _ = read_files(kit, lab.editable)
        skeleton = all_kgrams([text for _, text in skeleton_files])
        sources = []
        for entry in entries:
            if not entry.present:
                notes.append(f"{entry.student}: no submission folder" + (f" ({entry.path})" if entry.path else ""))
                continue
            files, problems = read_files(entry.path, lab.editable)
            notes.extend(f"{entry.student}, {lab.name}: {problem}" for problem in problems)
            if not files:
                continue
            source = Source(entry.student, files)
            fingerprint(source, skeleton)
            if not source.where:
                notes.append(f"{entry.student}, {lab.name}: nothing beyond the skeleton (not compared)")
                continue
            sources.append(source)
        counts[lab.name] = len(sources)
        reference = None
        if with_reference:
            files = reference_files(kit, lab.name)
            if not files:
                notes.append(f"{lab.name}: no reference solution in {kit / 'solutions' / lab.name}")
            else:
                reference = Source(REFERENCE, files)
                fingerprint(reference, skeleton)
        ranked.extend(compare(lab.name, sources, reference))
    # One note per missing submission folder, not one per lab.
    notes = list(dict.fromkeys(notes))
    return rank(ranked), notes, counts


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
    kit = (args.kit or KIT_ROOT).resolve()
    try:
        known = manifest.by_name(kit)
    except manifest.ManifestError as exc:
        print(f"grader similarity: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not known:
        print(f"grader similarity: error: {kit} is not a kit (no labs/<lab>/lab.json): pass --kit DIR", file=sys.stderr)
        return EXIT_USAGE
    try:
        names = manifest.resolve_names(args.labs, list(known)) if args.labs else list(known)
        entries = read_roster(args.roster)
    except (ValueError, RosterError) as exc:
        print(f"grader similarity: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        ranked, notes, counts = run(entries, kit, [known[n] for n in names], args.reference)
        csv_path, html_path = args.out / "similarity.csv", args.out / "similarity.html"
        write_csv(csv_path, ranked)
        write_html(html_path, ranked, notes, names, counts)
    except OSError as exc:
        print(f"grader similarity: error: cannot write to {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("grader similarity: interrupted", file=sys.stderr)
        return 130
    for note in notes:
        print(f"  not compared: {note}")
    top = ", ".join(f"{p.a.name}/{p.b.name} {p.score:.2f}" for p in ranked[:3])
    print(f"grader similarity: {len(ranked)} pairs share code" + (f" (highest: {top})" if top else "")
          + f"; wrote {csv_path} and {html_path}")
    return EXIT_OK
