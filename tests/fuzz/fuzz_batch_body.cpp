// The incremental POST /v1/chunk body parser (daemon/api/http/batch_request.hpp).
// Input: one byte choosing the form (bit 0: lines) and the piece size the
// body is fed in (the rest of the byte), then the body.
//
// Properties beyond "no crash": fed in pieces it gives exactly what it gives
// fed whole (same hashes or the same error); an accepted json body is valid
// JSON whose "hashes" are the same hashes; an accepted lines body is one
// hash a line, each the Xet form of what the line holds.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/api/http/batch_request.hpp"

using namespace dedupd;
using dedupd::daemon::api::http::HashSink;
using dedupd::daemon::api::http::HashStreamParser;

namespace {

void require(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_batch_body: property violated: %s %.*s\n", what, int(detail.size()), detail.data());
    std::abort();
  }
}

struct Sink : HashSink {
  std::vector<shard::Hash> hashes;
  bool put(const shard::Hash& h) override {
    hashes.push_back(h);
    return true;
  }
};

struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<shard::Hash> hashes;
};

Outcome parse(HashStreamParser::Form form, std::string_view body, std::size_t piece) {
  HashStreamParser p(form);
  Sink sink;
  bool ok = true;
  for (std::size_t at = 0; ok && at < body.size(); at += piece) ok = p.feed(body.substr(at, piece), sink);
  ok = ok && p.finish(sink);
  return {ok, p.error(), std::move(sink.hashes)};
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '\r')) v.remove_prefix(1);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto form = (data[0] & 1) ? HashStreamParser::Form::lines : HashStreamParser::Form::json;
  const std::size_t piece = std::size_t(data[0] >> 1) + 1;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  Outcome whole = parse(form, body, body.size() + 1);
  Outcome pieces = parse(form, body, piece);
  require(whole.ok == pieces.ok, "pieces accept what the whole accepts", body);
  require(whole.error == pieces.error, "pieces fail as the whole fails", body);
  require(whole.hashes == pieces.hashes, "pieces give the same hashes", body);
  require(whole.ok || !whole.error.empty(), "a refusal says why", body);
  if (!whole.ok) return 0;

  if (form == HashStreamParser::Form::json) {
    auto doc = nlohmann::json::parse(body, nullptr, false);
    require(!doc.is_discarded(), "an accepted body is valid JSON", body);
    require(doc.is_object() && doc.size() == 1 && doc.contains("hashes") && doc["hashes"].is_array(),
            "an accepted body is {\"hashes\": [...]}", body);
    const auto& list = doc["hashes"];
    require(list.size() == whole.hashes.size(), "as many hashes as the JSON holds", body);
    for (std::size_t i = 0; i < list.size(); ++i) {
      require(list[i].is_string(), "every entry is a string", body);
      auto h = shard::Hash::parse(list[i].get<std::string>());
      require(h.ok() && *h == whole.hashes[i], "the same hash as the JSON parser reads", body);
    }
  } else {
    std::size_t i = 0;
    std::string_view rest = body;
    while (!rest.empty()) {
      std::size_t nl = rest.find('\n');
      std::string_view line = trim(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      if (line.empty()) continue;
      auto h = shard::Hash::parse(line);
      require(h.ok() && i < whole.hashes.size() && *h == whole.hashes[i], "each line is its hash", body);
      ++i;
    }
    require(i == whole.hashes.size(), "one hash per non-blank line", body);
  }
  return 0;
}
