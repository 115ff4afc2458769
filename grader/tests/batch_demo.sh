#!/usr/bin/env bash
# Batch grading end to end, for a machine with an NVIDIA GPU: three submissions made from
# this kit are graded by `python3 -m grader batch`, then the gradebook is checked.
#
#   solutions  the template with the reference solution as labs/<lab>/<lab>.cu: 100%
#   skeletons  the template as exported: every lab fails its GPU tests (PARTIAL)
#   broken     the template with a compile error in vectorAdd: BUILD_ERROR there
#
# and grades/timing.json must hold each GPU's busy time.
#
#   bash grader/tests/batch_demo.sh [OUT] [lab ...]   (default: build/batch-demo, vectorAdd reduction)
#
# Needs the grader's --submission/--pristine options (instructor mode). Exit status 0
# when the gradebook is as expected.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=$(realpath -m "${1:-build/batch-demo}")
shift || true
labs=("$@")
[ ${#labs[@]} -gt 0 ] || labs=(vectorAdd reduction)
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH

rm -rf "$out"
mkdir -p "$out/submissions"
# The export writes outside the kit only; --include-untracked: the template is this
# working tree as it is, files not yet committed included.
template=$(mktemp -d "${TMPDIR:-/tmp}/labkit-demo-template.XXXXXX")
trap 'rm -rf "$template"' EXIT
python3 -m grader export --out "$template/template" --labs "${labs[@]}" --no-check --include-untracked
for who in solutions skeletons broken; do
  cp -r "$template/template" "$out/submissions/$who"
done
for lab in "${labs[@]}"; do
  cp "solutions/$lab/$lab.cu" "$out/submissions/solutions/labs/$lab/$lab.cu"
done
printf '\nthis line is not C++;\n' >> "$out/submissions/broken/labs/vectorAdd/vectorAdd.cu"
printf 'student,path\nsolutions,submissions/solutions\nskeletons,submissions/skeletons\nbroken,submissions/broken\n' \
  > "$out/roster.csv"

start=$(date +%s)
status=0
python3 -m grader batch "$out/roster.csv" --out "$out/grades" --labs "${labs[@]}" || status=$?
echo "batch: exit status $status in $(( $(date +%s) - start )) s"
echo
if command -v column >/dev/null 2>&1; then column -s, -t < "$out/grades/gradebook.csv"; else cat "$out/grades/gradebook.csv"; fi
echo

python3 - "$out/grades" "${labs[@]}" <<'PY'
import csv, json, sys
from pathlib import Path
grades, labs = Path(sys.argv[1]), sys.argv[2:]
rows = {row["student"]: row for row in csv.DictReader((grades / "gradebook.csv").open())}
problems = []
def expect(ok, what):
    print(("ok      " if ok else "WRONG   ") + what)
    if not ok:
        problems.append(what)
def statuses(student):
    data = json.loads((grades / "reports" / f"{student}.json").read_text())
    return {lab["lab"]: lab["status"] for lab in data["labs"]}, data
expect(set(rows) == {"solutions", "skeletons", "broken"}, "one row per student")
sol, data = statuses("solutions")
expect(all(sol.get(lab) == "PASS" for lab in labs), f"solutions: every lab PASS ({sol})")
expect(float(rows["solutions"]["total"]) == float(rows["solutions"]["max"]),
       f"solutions: full points ({rows['solutions']['total']}/{rows['solutions']['max']})")
expect(rows["solutions"]["seed"] not in ("", None), f"solutions: the hidden seed is recorded ({rows['solutions']['seed']})")
skel, _ = statuses("skeletons")
expect(all(skel.get(lab) == "PARTIAL" for lab in labs), f"skeletons: every lab PARTIAL ({skel})")
expect(float(rows["skeletons"]["total"]) < float(rows["skeletons"]["max"]) / 2,
       f"skeletons: few points ({rows['skeletons']['total']}/{rows['skeletons']['max']})")
broken, _ = statuses("broken")
expect(broken.get("vectorAdd") == "BUILD_ERROR" and float(rows["broken"]["vectorAdd"]) == 0,
       f"broken: vectorAdd BUILD_ERROR with 0 points ({broken})")
expect(all(broken.get(lab) == skel.get(lab) for lab in labs if lab != "vectorAdd"),
       "broken: the other labs graded like the skeleton")
timing = json.loads((grades / "timing.json").read_text())
per_gpu = timing.get("per_gpu", [])
expect(sum(one["students"] for one in per_gpu) == 3
       and all(one["busy_s"] <= one["of_s"] and (one["busy_s"] > 0 or not one["students"]) for one in per_gpu),
       "timing.json: each GPU's busy time, 3 students in all ("
       + ", ".join(f"GPU {one['gpu']} {one['busy_s']:.0f} s of {one['of_s']:.0f} s" for one in per_gpu) + ")")
print("batch demo: " + ("OK" if not problems else f"{len(problems)} problem(s)"))
sys.exit(1 if problems else 0)
PY
