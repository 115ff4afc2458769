// Provided by the kit. Presenting a bench's measurements (lab/bench.h): the table on
// stdout, the lines a student pastes into answers.md, and the JSON document the grader
// reads (lab/bench_document.h). Nothing here measures anything.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "lab/bench.h"
#include "lab/bench_document.h"
#include "lab/bench_json.h"

namespace lab::bench {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_optional(double v, bool present) { return present ? json_number(v) : "null"; }

const CandidateResult* WorkloadResult::find(Role role) const {
  for (const CandidateResult& r : results) {
    if (r.c.role == role) return &r;
  }
  return nullptr;
}

namespace {

// The contradicted calls of a judge program's candidate: null when there were none, else
// {"bound_ms": the bound, "gaps_ms": [the judge's clock less the stamps, per call]}.
std::string misses_json(const CandidateResult& r) {
  if (r.boundary_miss_gaps.empty()) return "null";
  std::string out = "{\"bound_ms\": " + json_number(r.boundary_bound_ms) + ", \"gaps_ms\": [";
  for (std::size_t i = 0; i < r.boundary_miss_gaps.size(); ++i) {
    out += (i ? ", " : "") + json_number(r.boundary_miss_gaps[i]);
  }
  return out + "]}";
}

}  // namespace

double WorkloadResult::throughput(const CandidateResult& r) const {
  const double work = r.c.amount > 0 ? r.c.amount : amount;
  return r.s.median > 0 ? work / (r.s.median * 1e-3) / 1e9 : 0.0;
}

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The library the table and the JSON compare with: the first one timed.
const CandidateResult* library_of(const WorkloadResult& w) {
  for (const CandidateResult& r : w.results) {
    if (r.c.role == Role::Library && !r.ms.empty()) return &r;
  }
  return nullptr;
}

std::string check_column(const WorkloadResult& w, const CandidateResult& r) {
  std::string check = r.c.unchecked ? "-" : (r.check_failures == 0 ? "ok" : "FAILED");
  if (r.c.role == Role::Student && !w.inputs_problem.empty()) check = "INPUT CHANGED";
  if (r.host_suspect > 0) check += " host-time!";
  if (r.boundary_suspect > 0) check += " stamps!";
  return check;
}

}  // namespace

void print_table(const WorkloadResult& w) {
  const CandidateResult* reference = w.find(Role::Reference);
  if (reference != nullptr && reference->ms.empty()) reference = nullptr;
  const CandidateResult* library = library_of(w);
  if (w.cpu_runs > 0) std::printf("CPU version (sdkTimer): %.3f ms, average of %d run(s)\n", w.cpu_ms, w.cpu_runs);
  std::printf("%-22s %-9s %10s %9s %7s %10s %7s %9s %7s %7s  %s\n", "name", "role", "median ms", "IQR ms", "samples",
              w.unit.c_str(), "% peak", "x CPU", "x ref", "x lib", "check");
  for (const CandidateResult& r : w.results) {
    const bool timed = !r.ms.empty();
    std::printf("%-22s %-9s %10s %9s %7zu %10s %7s %9s %7s %7s  %s\n", r.c.name.c_str(), to_string(r.c.role),
                timed ? fmt("%.4f", r.s.median).c_str() : "-", timed ? fmt("%.4f", r.s.q3 - r.s.q1).c_str() : "-",
                r.ms.size(), timed ? fmt("%.1f", w.throughput(r)).c_str() : "-",
                timed && w.peak > 0 ? fmt("%.1f%%", 100 * w.throughput(r) / w.peak).c_str() : "-",
                timed && w.cpu_ms > 0 ? fmt("%.1f", w.cpu_ms / r.s.median).c_str() : "-",
                timed && reference ? fmt("%.2f", reference->s.median / r.s.median).c_str() : "-",
                timed && library ? fmt("%.2f", library->s.median / r.s.median).c_str() : "-",
                check_column(w, r).c_str());
  }
  for (const CandidateResult& r : w.results) {
    if (!r.first_failure.empty()) std::printf("  %s: %s\n", r.c.name.c_str(), r.first_failure.c_str());
  }
  if (!w.inputs_problem.empty()) std::printf("  inputs changed: %s\n", w.inputs_problem.c_str());
  if (!w.ratios.empty()) {
    std::printf("student / reference time: median %.3f over %zu interleaved pairs (±%.1f%%)%s\n", w.pair.median,
                w.pair.count, 100 * w.pair.rel_se, w.pair.rel_se > w.target_rel_se ? "  [noisy]" : "");
  }
  std::fflush(stdout);
}

std::string workload_json(const WorkloadResult& w) {
  const CandidateResult* reference = w.find(Role::Reference);
  if (reference != nullptr && reference->ms.empty()) reference = nullptr;
  const CandidateResult* library = library_of(w);
  std::ostringstream js;
  js << "{\"name\": " << json_string(w.name) << ", \"function\": " << json_string(w.function)
     << ", \"graded\": " << (w.graded ? "true" : "false") << ", \"unit\": " << json_string(w.unit)
     << ", \"amount\": " << json_number(w.amount) << ", \"peak\": " << json_optional(w.peak, w.peak > 0)
     << (w.peak > 0 && !w.peak_of.empty() ? ", \"peak_of\": " + json_string(w.peak_of) : std::string())
     << ", \"cpu_ms\": " << json_optional(w.cpu_ms, w.cpu_runs > 0) << ", \"cpu_runs\": " << w.cpu_runs
     << ", \"inputs_check\": " << (w.inputs_problem.empty() ? "null" : json_string(w.inputs_problem))
     << ", \"seconds\": " << json_number(w.seconds);
  if (!w.ratios.empty()) {
    js << ", \"pair\": {\"ratio_median\": " << json_number(w.pair.median) << ", \"ratio_rel_se\": "
       << json_number(w.pair.rel_se) << ", \"samples\": " << w.pair.count
       << ", \"noisy\": " << (w.pair.rel_se > w.target_rel_se ? "true" : "false") << "}";
  } else {
    js << ", \"pair\": null";
  }
  js << ", \"results\": [";
  bool first = true;
  for (const CandidateResult& r : w.results) {
    const bool timed = !r.ms.empty();
    const bool is_student = r.c.role == Role::Student;
    js << (first ? "" : ", ") << "{\"name\": " << json_string(r.c.name) << ", \"role\": "
       << json_string(to_string(r.c.role)) << ", \"description\": " << json_string(r.c.description)
       << ", \"median_ms\": " << json_optional(r.s.median, timed) << ", \"q1_ms\": " << json_optional(r.s.q1, timed)
       << ", \"q3_ms\": " << json_optional(r.s.q3, timed) << ", \"samples\": " << r.ms.size()
       << ", \"noisy\": " << (r.s.rel_se > w.target_rel_se ? "true" : "false")
       << ", \"throughput\": " << json_optional(w.throughput(r), timed)
       << ", \"pct_peak\": " << json_optional(100 * w.throughput(r) / w.peak, timed && w.peak > 0)
       << ", \"speedup_vs_cpu\": " << json_optional(w.cpu_ms / r.s.median, timed && w.cpu_runs > 0)
       << ", \"speed_vs_reference\": "
       << json_optional(reference ? reference->s.median / r.s.median : 0, timed && reference)
       << ", \"speed_vs_library\": " << json_optional(library ? library->s.median / r.s.median : 0, timed && library)
       << ", \"checks\": " << r.checks << ", \"check_failures\": " << r.check_failures
       << ", \"first_failure\": " << (r.first_failure.empty() ? "null" : json_string(r.first_failure))
       << ", \"host_suspect\": " << r.host_suspect << ", \"boundary_suspect\": " << r.boundary_suspect
       << ", \"boundary_retaken\": " << r.boundary_retaken
       << ", \"boundary_excess_ms\": " << json_optional(r.boundary_excess_ms, !r.boundary_excess.empty())
       << ", \"boundary_misses\": " << misses_json(r)
       << ", \"remote\": " << (r.remote ? "true" : "false")
       << ", \"inputs_changed\": " << (is_student && !w.inputs_problem.empty() ? "true" : "false") << "}";
    first = false;
  }
  js << "]}";
  return js.str();
}

// ---- the answers ---------------------------------------------------------------------

std::string infer_peak_of(double peak, const DeviceFacts& device) {
  if (!(peak > 0)) return "";
  const std::array<std::pair<const char*, double>, 3> peaks{{{"dram", device.peak_dram_gbps},
                                                             {"fp32", device.peak_fp32_gflops},
                                                             {"rsqrt", device.peak_rsqrt_gops}}};
  // A workload's peak is one of the device's, or a small whole fraction or multiple of one
  // (sobel: 2 bytes of DRAM traffic per pixel, the DRAM peak / 2). The device's peaks are
  // far apart, so only one can match this closely.
  for (const auto& [name, whole] : peaks) {
    if (!(whole > 0)) continue;
    for (int k = 1; k <= 4; ++k) {
      for (const double scale : {1.0 * k, 1.0 / k}) {
        if (std::fabs(peak - whole * scale) <= 1e-6 * peak) return name;
      }
    }
  }
  return "";
}

std::string device_label(const DeviceFacts& device) {
  return device.name + " (sm_" + std::to_string(device.major) + std::to_string(device.minor) + ")";
}

namespace {

// Four significant digits, never an exponent for figures of 1 and more: 3002, 89.53, 1.234.
std::string answer_number(double v) {
  if (std::fabs(v) < 1) return fmt("%.4g", v);
  const int digits = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, 3 - digits), v);
  return buf;
}

// The workload a question reads its figure from: the one it names, else the first graded.
const WorkloadResult* workload_of(const BenchQuestion& q, const std::vector<WorkloadResult>& workloads) {
  for (const WorkloadResult& w : workloads) {
    if (q.workload.empty() ? w.graded : w.name == q.workload) return &w;
  }
  return nullptr;
}

}  // namespace

std::vector<AnswerLine> answer_lines(const std::vector<BenchQuestion>& questions,
                                     const std::vector<WorkloadResult>& workloads, const DeviceFacts& device,
                                     bool size_given) {
  std::vector<AnswerLine> lines;
  for (const BenchQuestion& q : questions) {
    const WorkloadResult* w = workload_of(q, workloads);
    const CandidateResult* r = w != nullptr ? w->find(Role::Student) : nullptr;
    AnswerLine a;
    a.id = q.id;
    a.figure = q.figure;
    if (size_given) {
      a.why = "this run timed the size given with --size; run the bench without --size for the graded size";
    } else if (w == nullptr) {
      a.why = q.workload.empty() ? "no graded workload was timed" : "the workload \"" + q.workload + "\" was not timed";
    } else if (r == nullptr || r->ms.empty()) {
      a.why = "your implementation was not timed in \"" + w->name + "\" (see its table)";
    } else if (r->check_failures > 0 || !w->inputs_problem.empty()) {
      a.why = "your implementation's output in \"" + w->name + "\" was wrong: fix it, then run the bench again";
    } else if (q.figure == "pct_peak" && !(w->peak > 0)) {
      a.why = "\"" + w->name + "\" has no peak to give a % of";
    } else {
      std::string unit;
      if (q.figure == "pct_peak") {
        a.value = 100 * w->throughput(*r) / w->peak;
        unit = "% of peak";
      } else if (q.figure == "median_ms") {
        a.value = r->s.median;
        unit = " ms";
      } else {
        a.value = w->throughput(*r);
        unit = " " + w->unit;
      }
      a.given = std::isfinite(a.value) && a.value > 0;
      if (a.given) {
        a.line = "Answer: " + answer_number(a.value) + unit + " measured on " + device_label(device);
      } else {
        a.why = "the bench has no " + q.figure + " figure for your implementation";
      }
    }
    lines.push_back(std::move(a));
  }
  return lines;
}

void print_answer_lines(const std::string& lab, const std::vector<AnswerLine>& lines) {
  for (const AnswerLine& a : lines) {
    if (a.given) {
      std::printf("\nlabs/%s/answers.md, ## %s (paste this line):\n%s\n", lab.c_str(), a.id.c_str(), a.line.c_str());
    } else {
      std::printf("\nlabs/%s/answers.md, ## %s: no line to paste: %s\n", lab.c_str(), a.id.c_str(), a.why.c_str());
    }
  }
  std::fflush(stdout);
}

std::string answer_lines_json(const std::vector<AnswerLine>& lines) {
  std::string js = "[";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const AnswerLine& a = lines[i];
    js += (i ? ", " : "") + std::string("{\"id\": ") + json_string(a.id) + ", \"figure\": " + json_string(a.figure) +
          ", \"value\": " + json_optional(a.value, a.given) +
          ", \"line\": " + (a.given ? json_string(a.line) : "null") +
          ", \"why\": " + (a.given ? "null" : json_string(a.why)) + "}";
  }
  return js + "]";
}

// ---- the document ---------------------------------------------------------------------

namespace {

// One calibration's figures, without the closing brace.
std::string gap_json(const Summary& gap, double bound_ms) {
  return "{\"median_ms\": " + json_number(gap.median) + ", \"q1_ms\": " + json_number(gap.q1) +
         ", \"q3_ms\": " + json_number(gap.q3) + ", \"bound_ms\": " + json_number(bound_ms) +
         ", \"samples\": " + std::to_string(gap.count);
}

// A worker's boundary: after its own call, and (`after_other`) after the other worker's.
std::string boundary_json(const Boundary& b) {
  return gap_json(b.gap, b.bound_ms) + ", \"after_other\": " + gap_json(b.gap_after_other, b.bound_after_other_ms) +
         "}}";
}

// The run's settings: options, device, reference and judge.
void write_settings(std::ostream& out, const BenchDocument& doc) {
  const Options& o = doc.options;
  const DeviceFacts& f = doc.device;
  out << ", \"seed\": " << doc.seed << ",\n \"options\": {\"size\": " << o.size
      << ", \"graded_only\": " << (o.graded_only ? "true" : "false") << ", \"filter\": " << json_string(o.filter)
      << ", \"quick\": " << (o.quick ? "true" : "false") << "},\n \"device\": {\"name\": " << json_string(f.name)
      << ", \"compute_capability\": " << json_string(std::to_string(f.major) + "." + std::to_string(f.minor))
      << ", \"sms\": " << f.sms << ", \"sm_clock_mhz\": " << json_number(f.sm_clock_mhz)
      << ", \"l2_bytes\": " << f.l2_bytes << ", \"peak_dram_gbps\": " << json_number(f.peak_dram_gbps)
      << ", \"peak_fp32_gflops\": " << json_number(f.peak_fp32_gflops)
      << ", \"peak_rsqrt_gops\": " << json_number(f.peak_rsqrt_gops) << "},\n \"reference\": {\"path\": "
      << json_string(doc.reference_path) << ", \"loaded\": " << (doc.reference_loaded ? "true" : "false")
      << ", \"variant\": " << json_string(o.reference_variant) << ", \"error\": "
      << (doc.reference_error.empty() ? "null" : json_string(doc.reference_error)) << "},\n \"judge\": ";
  if (doc.judge) {
    out << "{\"impl\": " << json_string(o.remote.impl) << ", \"boundary\": {\"student\": "
        << boundary_json(doc.student_boundary) << ", \"reference\": " << boundary_json(doc.reference_boundary)
        << "}, \"workers\": " << json_string(doc.workers) << "}";
  } else {
    out << "null";
  }
}

}  // namespace

std::string bench_json(const BenchDocument& doc) {
  std::ostringstream out;
  out << "{\"schema\": " << json_string(kBenchSchema) << ", \"version\": " << kBenchSchemaVersion
      << ", \"status\": " << json_string(doc.status) << ", \"lab\": " << json_string(doc.lab);
  if (doc.status != "ok") {
    out << ", \"message\": " << json_string(doc.message) << "}\n";
    return out.str();
  }
  write_settings(out, doc);
  out << ",\n \"workloads\": [";
  for (std::size_t i = 0; i < doc.workloads.size(); ++i) {
    out << (i ? ",\n  " : "\n  ") << workload_json(doc.workloads[i]);
  }
  out << "],\n \"answers\": " << answer_lines_json(doc.answers) << ",\n \"errors\": [";
  for (std::size_t i = 0; i < doc.errors.size(); ++i) out << (i ? ", " : "") << json_string(doc.errors[i]);
  const BenchSeconds& t = doc.seconds;
  out << "],\n \"seconds\": {\"set_up\": " << json_number(t.set_up) << ", \"gate\": " << json_number(t.gate)
      << ", \"calibration\": " << json_number(t.calibration) << ", \"workloads\": " << json_number(t.workloads)
      << "}}\n";
  return out.str();
}

bool write_bench_json(const std::string& path, const BenchDocument& doc) {
  std::ofstream out(path);
  out << bench_json(doc);
  return static_cast<bool>(out);
}

}  // namespace lab::bench
