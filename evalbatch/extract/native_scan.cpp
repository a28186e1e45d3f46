// The events pass's payload walk, natively: one strict parse per payload (simdjson) that gives
// what sql/events/event_scan.sql gives for a row, in the same texts, or says the row is one the
// reference must scan (D-3 JSON check, D-7, E-26, E-61; decision E-108).
//
// Only glue: the parsing is simdjson's (DOM API). This file selects the fields event_scan reads
// per type, writes them as DuckDB's json_extract writes them (yyjson's minified form: strings
// unescaped then escaped again only where JSON must, integers as written, doubles in their
// shortest round-trip digits), and flags the rows it does not take:
//   - not strict JSON (RFC 8259: NaN, trailing commas, bad UTF-8, numbers out of range...);
//   - text the reference marks suspect (`NaN`, `Infinity`, a comma before a closing bracket),
//     a repeated key at the top or in a tool call's `agent` object;
//   - values whose text the reference keeps as written and this walk cannot see (a trialIndex
//     whose text holds a '.', a negative zero).
// Those rows are scanned by the reference query, so both paths give one answer by construction
// for them and by test (tests/test_native_scan.py) for the rest.
//
// Input: the `type` (already v2) and `payload` (never null: coalesced to 'null') columns of one
// Arrow record batch, by the Arrow C data interface. Output: per row a status, the number of
// `f` fields (-1 when f is NULL) and the exact-number flag; per field its text or NULL.

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

static_assert(simdjson::SIMDJSON_VERSION_MAJOR == 3, "built and tested against simdjson 3");

namespace {

struct ArrowArray {
  int64_t length, null_count, offset, n_buffers, n_children;
  const void** buffers;
  ArrowArray** children;
  ArrowArray* dictionary;
  void (*release)(ArrowArray*);
  void* private_data;
};

// A string column: utf8 (32-bit offsets) or large_utf8 (64-bit).
struct Strings {
  const ArrowArray* array;
  bool large;
  bool is_null(int64_t i) const {
    const auto* bits = static_cast<const uint8_t*>(array->buffers[0]);
    const int64_t j = i + array->offset;
    return bits && !((bits[j >> 3] >> (j & 7)) & 1);
  }
  std::string_view at(int64_t i) const {
    const int64_t j = i + array->offset;
    int64_t a, b;
    if (large) {
      const auto* off = static_cast<const int64_t*>(array->buffers[1]);
      a = off[j];
      b = off[j + 1];
    } else {
      const auto* off = static_cast<const int32_t*>(array->buffers[1]);
      a = off[j];
      b = off[j + 1];
    }
    return {static_cast<const char*>(array->buffers[2]) + a, static_cast<size_t>(b - a)};
  }
};

// The event types event_scan reads fields of, and the fields (event_scan.sql's json_extract
// paths, in its order; "agent.agentId" is the one nested path). The one list of them is
// evalbatch/extract/scan_fields.py (E-134): a library whose table differs is not loaded.
enum Kind : int { OTHER, TOOL_CALLED, USAGE, INV_STARTED, INV_COMPLETED, SCORED, EVAL_STARTED,
                  NODE_DISPATCHED, CHAIN_EVENT, DISPATCH_JOINED, EVAL_COMPLETED, INSPECT_EVAL,
                  INSPECT_SAMPLE };

struct KindFields {
  std::string_view type;
  Kind kind;
  std::vector<std::string_view> fields;
};

const std::vector<KindFields>& kinds() {
  static const std::vector<KindFields> table = {
      {"agent.tool-called", TOOL_CALLED,
       {"agentId", "agent.agentId", "toolName", "toolId", "inputs", "arguments"}},
      {"provider.usage", USAGE,
       {"inputTokens", "outputTokens", "costEstimateUsd", "currency", "cacheHit"}},
      {"agent.invocation-started", INV_STARTED,
       {"agentId", "agent.agentId", "invocationId", "modelClass"}},
      {"agent.invocation-completed", INV_COMPLETED, {"invocationId"}},
      {"eval.scored", SCORED, {"taskId", "trialIndex", "score", "passed", "latencyMs", "costUsd"}},
      {"eval.started", EVAL_STARTED,
       {"suiteId", "suiteVersion", "modes", "trialCount", "baselineRunId"}},
      {"node.dispatched", NODE_DISPATCHED, {"childRunId"}},
      {"workflow-chain.event", CHAIN_EVENT, {"childRunId"}},
      {"dispatch.joined", DISPATCH_JOINED, {"mergeOrder"}},
      {"eval.completed", EVAL_COMPLETED, {}},
      // what an Inspect log calls its run and each trial (E-146), and what errored (E-147)
      {"evalbatch.inspect.eval", INSPECT_EVAL, {"task", "model", "logFile", "erroredLeftOut"}},
      {"evalbatch.inspect.sample", INSPECT_SAMPLE,
       {"taskId", "trialIndex", "sampleId", "epoch", "errored"}},
  };
  return table;
}

const KindFields* kind_of(std::string_view type) {
  for (const auto& k : kinds())
    if (k.type == type) return &k;
  return nullptr;
}

// ---- writing values as yyjson writes them (DuckDB's json_extract texts) ----

void write_string(std::string& out, std::string_view s) {
  static const char hex[] = "0123456789ABCDEF";
  out.push_back('"');
  size_t start = 0;
  for (size_t i = 0; i < s.size(); i++) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + start, i - start);
    start = i + 1;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        out.append("\\u00");
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
  }
  out.append(s.data() + start, s.size() - start);
  out.push_back('"');
}

// A double in its shortest round-trip digits, laid out as yyjson lays them out: plain decimals
// (with ".0" when integral) while the decimal point falls in (-6, 21], else d.ddde[-]x.
// Returns false for a negative zero, which the reference writes as the text had it ("-0" is an
// integer there, "-0.0" a double): the row goes to the reference.
bool write_double(std::string& out, double d) {
  if (d == 0 && std::signbit(d)) return false;
  if (!std::isfinite(d)) return false;
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  if (res.ec != std::errc()) return false;
  std::string_view sci(buf, res.ptr - buf);
  size_t at = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    at = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  digits.push_back(sci[at]);
  if (at + 1 < e && sci[at + 1] == '.') digits.append(sci.substr(at + 2, e - at - 2));
  int exponent = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exponent);
  const int n = static_cast<int>(digits.size());
  const int dot = exponent + 1;  // digits before the decimal point
  if (dot > -6 && dot <= 21) {
    if (dot <= 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-dot), '0');
      out.append(digits);
    } else if (dot >= n) {
      out.append(digits);
      out.append(static_cast<size_t>(dot - n), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, dot);
      out.push_back('.');
      out.append(digits, dot, std::string::npos);
    }
  } else {
    out.push_back(digits[0]);
    if (n > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    out.push_back('e');
    char ebuf[8];
    auto er = std::to_chars(ebuf, ebuf + sizeof ebuf, exponent);
    out.append(ebuf, er.ptr - ebuf);
  }
  return true;
}

bool write_value(std::string& out, simdjson::dom::element v) {
  using T = simdjson::dom::element_type;
  char buf[32];
  switch (v.type()) {
    case T::NULL_VALUE: out.append("null"); return true;
    case T::BOOL: out.append(v.get_bool().value_unsafe() ? "true" : "false"); return true;
    case T::STRING: write_string(out, v.get_string().value_unsafe()); return true;
    case T::INT64: {
      auto r = std::to_chars(buf, buf + sizeof buf, v.get_int64().value_unsafe());
      out.append(buf, r.ptr - buf);
      return true;
    }
    case T::UINT64: {
      auto r = std::to_chars(buf, buf + sizeof buf, v.get_uint64().value_unsafe());
      out.append(buf, r.ptr - buf);
      return true;
    }
    case T::DOUBLE: return write_double(out, v.get_double().value_unsafe());
    case T::ARRAY: {
      out.push_back('[');
      bool first = true;
      simdjson::dom::array items = v.get_array().value_unsafe();
      for (simdjson::dom::element item : items) {
        if (!first) out.push_back(',');
        first = false;
        if (!write_value(out, item)) return false;
      }
      out.push_back(']');
      return true;
    }
    case T::OBJECT: {
      out.push_back('{');
      bool first = true;
      simdjson::dom::object fields = v.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair field : fields) {
        if (!first) out.push_back(',');
        first = false;
        write_string(out, field.key);
        out.push_back(':');
        if (!write_value(out, field.value)) return false;
      }
      out.push_back('}');
      return true;
    }
  }
  return false;
}

// ---- the text checks of event_scan (the rows it marks suspect go to the reference) ----

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// `,\s*[\]}]` anywhere in the text (strings included, as the reference's regexp reads it)
bool comma_before_close(std::string_view text) {
  size_t at = 0;
  while ((at = text.find(',', at)) != std::string_view::npos) {
    size_t i = at + 1;
    while (i < text.size() && is_space(text[i])) i++;
    if (i < text.size() && (text[i] == ']' || text[i] == '}')) return true;
    at = i;
  }
  return false;
}

bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// 16 or more characters of [-+.0-9eE] in a row: a number that may carry more digits than a
// double keeps (D-7: the reference keeps the payload text beside it). Each window of 16 is
// judged by its last character first: most texts are passed over 16 characters at a time.
bool long_number_run(std::string_view text) {
  constexpr size_t run = 16;
  size_t start = 0;  // no run of 16 starts before `start`
  while (start + run <= text.size()) {
    const size_t last = start + run - 1;
    if (!is_number_char(text[last])) {
      start = last + 1;
      continue;
    }
    size_t first = last;  // text[first..last] are number characters
    while (first > start && is_number_char(text[first - 1])) first--;
    if (first == start) return true;
    start = first;
  }
  return false;
}

// Whether a key is written twice among `keys` (few: pairwise; many: sorted).
bool has_repeated_key(std::vector<std::string_view>& keys) {
  const size_t n = keys.size();
  if (n > 16) {
    std::sort(keys.begin(), keys.end());
    return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
  }
  for (size_t i = 1; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (keys[i] == keys[j]) return true;
  return false;
}

bool has_repeated_key(simdjson::dom::object object, std::vector<std::string_view>& keys) {
  keys.clear();
  for (simdjson::dom::key_value_pair field : object) keys.push_back(field.key);
  return has_repeated_key(keys);
}

// `part` in `text` (short texts: glibc's memmem costs more to set up than to search them)
bool contains(std::string_view text, std::string_view part) {
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (static_cast<size_t>(end - at) >= part.size()) {
    at = static_cast<const char*>(std::memchr(at, part[0], end - at - part.size() + 1));
    if (!at) return false;
    if (std::memcmp(at, part.data(), part.size()) == 0) return true;
    at++;
  }
  return false;
}

enum Status : uint8_t { TAKEN = 0, TO_REFERENCE = 1 };

// What one thread wrote: per field slot whether it is present and where its text ends.
struct Chunk {
  std::vector<uint8_t> slot_valid;
  std::vector<int64_t> slot_end;
  std::string bytes;
};

struct Result {
  std::vector<Chunk> chunks;
};

constexpr size_t MAX_FIELDS = 6;

struct Scanner {
  simdjson::dom::parser parser;
  std::vector<std::string_view> keys;
  std::vector<char> padded;  // a payload copied with the padding simdjson reads past its end

  // One row: its status; on TAKEN, its fields appended to `chunk` and *n_fields set. `padded`
  // says whether SIMDJSON_PADDING bytes of the column follow the payload (parsed in place).
  uint8_t scan(std::string_view type, std::string_view payload, bool in_place, Chunk& chunk,
               int8_t* n_fields, uint8_t* exact) {
    *n_fields = -1;
    *exact = 0;
    simdjson::dom::element doc;
    const char* text = payload.data();
    if (!in_place) {
      padded.resize(payload.size() + simdjson::SIMDJSON_PADDING);
      std::memcpy(padded.data(), payload.data(), payload.size());
      text = padded.data();
    }
    if (parser.parse(text, payload.size(), false).get(doc)) return TO_REFERENCE;
    if (contains(payload, "NaN") || contains(payload, "Infinity") || comma_before_close(payload))
      return TO_REFERENCE;
    const KindFields* kind = kind_of(type);
    if (!kind) return TAKEN;  // checked only: f is NULL

    // One walk over the top-level fields: their keys (a repeated key in a graded type's
    // payload is suspect: E-26) and the values of the fields this type reads.
    simdjson::dom::object object;
    const bool is_object = !doc.get_object().get(object);
    const bool graded = kind->kind <= EVAL_STARTED || kind->kind == EVAL_COMPLETED;
    const size_t n = kind->fields.size();
    simdjson::dom::element values[MAX_FIELDS];
    bool found[MAX_FIELDS] = {};
    simdjson::dom::element agent_value;
    bool agent_found = false;
    const bool reads_agent = kind->kind == TOOL_CALLED || kind->kind == INV_STARTED;
    if (is_object) {
      keys.clear();
      for (simdjson::dom::key_value_pair field : object) {
        keys.push_back(field.key);
        for (size_t i = 0; i < n; i++) {
          if (!found[i] && field.key == kind->fields[i]) {
            values[i] = field.value;
            found[i] = true;
          }
        }
        if (reads_agent && !agent_found && field.key == "agent") {
          agent_value = field.value;
          agent_found = true;
        }
      }
      if (graded && has_repeated_key(keys)) return TO_REFERENCE;
    }
    if (kind->kind == EVAL_COMPLETED) return TAKEN;  // checked only: f is NULL

    // the `agent` object of the types that read agent.agentId (D-2); a repeated key in it is
    // suspect on a tool call and read first-wins elsewhere: the reference reads both
    simdjson::dom::object agent;
    if (agent_found && !agent_value.get_object().get(agent)) {
      if (has_repeated_key(agent, keys)) return TO_REFERENCE;
      for (size_t i = 0; i < n; i++)
        if (kind->fields[i] == "agent.agentId") found[i] = !agent["agentId"].get(values[i]);
    }

    const size_t first_slot = chunk.slot_valid.size();
    const size_t first_byte = chunk.bytes.size();
    for (size_t i = 0; i < n; i++) {
      if (found[i]) {
        // a negative zero is written as the text had it by the reference; and where the
        // trialIndex's text holds a '.', the reference reads its digits off the payload (D-5)
        const size_t start = chunk.bytes.size();
        const bool written = write_value(chunk.bytes, values[i]);
        const bool index_text = kind->kind == SCORED && kind->fields[i] == "trialIndex" &&
                                chunk.bytes.find('.', start) != std::string::npos;
        if (!written || index_text) {
          chunk.slot_valid.resize(first_slot);
          chunk.slot_end.resize(first_slot);
          chunk.bytes.resize(first_byte);
          return TO_REFERENCE;
        }
      }
      chunk.slot_valid.push_back(found[i] ? 1 : 0);
      chunk.slot_end.push_back(static_cast<int64_t>(chunk.bytes.size()));
    }
    *n_fields = static_cast<int8_t>(n);
    if (kind->kind == TOOL_CALLED) *exact = long_number_run(payload) ? 1 : 0;
    return TAKEN;
  }
};

}  // namespace

extern "C" {

// The fields of each type, for the caller's own check that it reads `f` as this file writes it.
const char* evalbatch_scan_fields(int index) {
  static std::vector<std::string> described;
  if (described.empty()) {
    for (const auto& k : kinds()) {
      std::string line(k.type);
      line.push_back(':');
      for (size_t i = 0; i < k.fields.size(); i++) {
        if (i) line.push_back(',');
        line.append(k.fields[i]);
      }
      described.push_back(line);
    }
  }
  if (index < 0 || index >= static_cast<int>(described.size())) return nullptr;
  return described[index].c_str();
}

const char* evalbatch_scan_simdjson_version() { return SIMDJSON_STRINGIFY(SIMDJSON_VERSION); }

// Scan one batch over `threads` threads. status, n_fields and exact have one entry per row.
// Returns a handle to the field texts (evalbatch_scan_sizes / _copy / _free).
void* evalbatch_scan(const ArrowArray* types, int types_large, const ArrowArray* payloads,
                     int payloads_large, int threads, uint8_t* status, int8_t* n_fields,
                     uint8_t* exact) {
  const Strings type_column{types, types_large != 0};
  const Strings payload_column{payloads, payloads_large != 0};
  const int64_t n = payloads->length;
  if (threads < 1) threads = 1;
  if (n < 4096) threads = 1;
  auto* result = new Result;
  result->chunks.resize(threads);
  // the end of the column's text: a payload with SIMDJSON_PADDING bytes after it before there
  // is parsed where it lies, the last few are copied
  const std::string_view last = n ? payload_column.at(n - 1) : std::string_view();
  const char* text_end = last.data() + last.size();
  auto work = [&](int t, int64_t lo, int64_t hi) {
    Scanner scanner;
    Chunk& chunk = result->chunks[t];
    chunk.slot_valid.reserve((hi - lo) * 4);
    chunk.slot_end.reserve((hi - lo) * 4);
    chunk.bytes.reserve((hi - lo) * 24);
    for (int64_t i = lo; i < hi; i++) {
      if (payload_column.is_null(i) || type_column.is_null(i)) {
        status[i] = TO_REFERENCE;
        n_fields[i] = -1;
        exact[i] = 0;
        continue;
      }
      const std::string_view payload = payload_column.at(i);
      const bool in_place = payload.data() + payload.size() + simdjson::SIMDJSON_PADDING <= text_end;
      status[i] = scanner.scan(type_column.at(i), payload, in_place, chunk, &n_fields[i], &exact[i]);
    }
  };
  const int64_t step = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; t++) {
    const int64_t lo = std::min(n, t * step), hi = std::min(n, lo + step);
    pool.emplace_back(work, t, lo, hi);
  }
  work(0, 0, std::min(n, step));
  for (auto& thread : pool) thread.join();
  return result;
}

void evalbatch_scan_sizes(void* handle, int64_t* n_slots, int64_t* n_bytes) {
  const auto* result = static_cast<Result*>(handle);
  *n_slots = 0;
  *n_bytes = 0;
  for (const auto& chunk : result->chunks) {
    *n_slots += static_cast<int64_t>(chunk.slot_valid.size());
    *n_bytes += static_cast<int64_t>(chunk.bytes.size());
  }
}

// Copy the field texts out: valid (one byte per slot), offsets (n_slots + 1), bytes.
void evalbatch_scan_copy(void* handle, uint8_t* valid, int64_t* offsets, char* bytes) {
  const auto* result = static_cast<Result*>(handle);
  int64_t slot = 0, base = 0;
  offsets[0] = 0;
  for (const auto& chunk : result->chunks) {
    std::memcpy(valid + slot, chunk.slot_valid.data(), chunk.slot_valid.size());
    for (size_t i = 0; i < chunk.slot_end.size(); i++) offsets[slot + 1 + i] = base + chunk.slot_end[i];
    std::memcpy(bytes + base, chunk.bytes.data(), chunk.bytes.size());
    slot += static_cast<int64_t>(chunk.slot_valid.size());
    base += static_cast<int64_t>(chunk.bytes.size());
  }
}

void evalbatch_scan_free(void* handle) { delete static_cast<Result*>(handle); }

// The blocks of a batch's rows (those with a sequence) that hold one run's consecutive
// sequence numbers, row after row: block k is rows firsts[k]..lasts[k], the keys (run, first
// sequence) to (run, last sequence) each once; a new one starts where the run id changes or the
// sequence is not the one before plus one. Rows reach the walk in the files' order, in pieces
// (DuckDB's threads read the files in parallel), and a run's sequence numbers are 0, 1, 2...
// as the host wrote them, so a run is one block or a few; when the blocks of each run cover
// sequence ranges apart, no key is held by two rows (D-3) and the events pass need not look
// for one. Returns how many blocks (at most the batch's rows), or -1 for a NULL run id (the
// caller looks the slow way).
int64_t evalbatch_key_blocks(const ArrowArray* run_ids, int run_ids_large,
                             const ArrowArray* sequences, int64_t* firsts, int64_t* lasts) {
  const Strings run_column{run_ids, run_ids_large != 0};
  const auto* values = static_cast<const int64_t*>(sequences->buffers[1]) + sequences->offset;
  const auto* valid = static_cast<const uint8_t*>(sequences->buffers[0]);
  std::string_view run_before;
  int64_t sequence_before = 0;
  int64_t blocks = 0;
  for (int64_t i = 0; i < sequences->length; i++) {
    const int64_t j = i + sequences->offset;
    if (valid && !((valid[j >> 3] >> (j & 7)) & 1)) continue;
    if (run_column.is_null(i)) return -1;
    const std::string_view run = run_column.at(i);
    const int64_t sequence = values[i];
    if (!blocks || run != run_before || sequence != sequence_before + 1) firsts[blocks++] = i;
    lasts[blocks - 1] = i;
    run_before = run;
    sequence_before = sequence;
  }
  return blocks;
}

// yyjson's text of a double, for the tests that compare it with DuckDB's (0 when the double is
// one this file sends to the reference).
int64_t evalbatch_format_double(double d, char* out, int64_t size) {
  std::string text;
  if (!write_double(text, d) || static_cast<int64_t>(text.size()) >= size) return 0;
  std::memcpy(out, text.data(), text.size());
  return static_cast<int64_t>(text.size());
}

}  // extern "C"
