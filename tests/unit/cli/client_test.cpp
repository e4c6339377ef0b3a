// The client against a fake daemon: every exit code, every failure mode of
// the socket, and the pure mappings behind them.
#include <gtest/gtest.h>

#include <curl/curl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "fake_daemon.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using namespace testing::verb_test;
// Unordered, not dedupctl::json; under a name of its own, or a batch of
// several test files sees two json in dedupctl.
using Json = nlohmann::json;

Json location() {
  return {{"xorb", kXorb},
          {"chunk_index", 0},
          {"byte_start", 0},
          {"byte_end", 17472},
          {"unpacked_bytes", 17472},
          {"flags", 2147483648u},
          {"shards", {{{"shard", kShard}, {"expiry", 1754664705}, {"keyed", true}}}}};
}

Json found(const std::string& h) { return {{"hash", h}, {"found", true}, {"locations", {location()}}}; }
Json missing(const std::string& h) { return {{"hash", h}, {"found", false}, {"locations", Json::array()}}; }

std::vector<std::string> with_socket(const FakeDaemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--socket", d.socket()});
  return args;
}

// ---- pure mappings -----------------------------------------------------

TEST(ResolveSocket, OptionThenEnvThenPackagedThenLocal) {
  auto none = [](const std::string&) { return false; };
  auto packaged = [](const std::string& p) { return p == "/run/dedupd/dedupd.sock"; };
  EXPECT_EQ(resolve_socket("/x.sock", std::string("/env.sock"), packaged), "/x.sock");
  EXPECT_EQ(resolve_socket("", std::string("/env.sock"), packaged), "/env.sock");
  EXPECT_EQ(resolve_socket("", std::string(""), packaged), "/run/dedupd/dedupd.sock");
  EXPECT_EQ(resolve_socket("", std::nullopt, none), "./local/dedupd.sock");
  // Installed, with its socket gone (dedupd.socket stopped or failed): still
  // the package's, so the error names it and the unit to start.
  auto unit_only = [](const std::string& p) { return p == "/lib/systemd/system/dedupd.socket"; };
  EXPECT_EQ(resolve_socket("", std::nullopt, unit_only), "/run/dedupd/dedupd.sock");
}

TEST(StatusError, EachStatusHasItsExitCode) {
  auto code = [](long status) { return status_error(Response{status, "", ""}, "x").code(); };
  EXPECT_EQ(code(400), 65);
  EXPECT_EQ(code(413), 65);
  EXPECT_EQ(code(422), 65);
  EXPECT_EQ(code(403), 77);
  EXPECT_EQ(code(404), 1);
  EXPECT_EQ(code(503), 69);
  EXPECT_EQ(code(500), 76);
  EXPECT_EQ(code(302), 76);
}

TEST(StatusError, CarriesTheDaemonsMessage) {
  Response r{403, R"({"error":{"code":"forbidden","message":"admin needs group dedupd-admin"}})", ""};
  auto e = status_error(r, "rescan");
  EXPECT_NE(std::string(e.what()).find("admin needs group dedupd-admin"), std::string::npos) << e.what();
  Response garbage{500, std::string("\x01\x02oops", 6), ""};
  EXPECT_NE(std::string(status_error(garbage, "x").what()).find("..oops"), std::string::npos);
}

TEST(TransportError, EachFailureHasItsExitCode) {
  EXPECT_EQ(transport_error(CURLE_COULDNT_CONNECT, ECONNREFUSED, "/s", false, 30).code(), 69);
  EXPECT_EQ(transport_error(CURLE_COULDNT_CONNECT, ENOENT, "/s", false, 30).code(), 69);
  EXPECT_EQ(transport_error(CURLE_COULDNT_CONNECT, EACCES, "/s", false, 30).code(), 77);
  EXPECT_EQ(transport_error(CURLE_OPERATION_TIMEDOUT, 0, "/s", false, 30).code(), 69);
  EXPECT_EQ(transport_error(CURLE_OPERATION_TIMEDOUT, 0, "/s", true, 30).code(), 76);
  EXPECT_EQ(transport_error(CURLE_GOT_NOTHING, 0, "/s", false, 30).code(), 76);
  EXPECT_EQ(transport_error(CURLE_PARTIAL_FILE, 0, "/s", true, 30).code(), 76);
  EXPECT_EQ(transport_error(CURLE_RECV_ERROR, ECONNRESET, "/s", true, 30).code(), 76);
  EXPECT_EQ(transport_error(CURLE_WEIRD_SERVER_REPLY, 0, "/s", true, 30).code(), 76);
}

TEST(ConnectError, PermissionNamesTheSocketsGroup) {
  testing::TempDir dir;
  testing::write_file(dir / "s", "");
  ::chmod((dir / "s").c_str(), 0660);
  auto e = connect_error(EACCES, dir / "s");
  EXPECT_EQ(e.code(), 77);
  EXPECT_NE(std::string(e.what()).find("group "), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("mode 0660"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("usermod -aG"), std::string::npos);
}

TEST(ReadHashes, OnePerLineWithBlanksCommentsAndCrlf) {
  std::istringstream in("  " + kRaw + "  \r\n\n# a comment\n" + kXorb + "\n" + std::string(64, 'A') + "\n");
  auto v = read_hashes(in);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], kRaw);
  EXPECT_EQ(v[1], kXorb);
  EXPECT_EQ(v[2], std::string(64, 'a')) << "normalised to lower case";
}

TEST(ReadHashes, MalformedLineIs65WithItsNumber) {
  std::istringstream in(kRaw + "\n\nnot-a-hash\n");
  try {
    read_hashes(in);
    FAIL();
  } catch (const CliError& e) {
    EXPECT_EQ(e.code(), 65);
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

// ---- query -------------------------------------------------------------

TEST(Query, SingleFoundPrintsTheLocation) {
  FakeDaemon d([](const Request& r) {
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.target, "/v1/chunk/" + kRaw);
    return http(200, found(kRaw).dump());
  });
  auto r = run_cli(with_socket(d, {"query", kRaw}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(kRaw + "  found, 1 location"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Xorb   " + kXorb), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#0, bytes 0..17472 of the xorb, 17.1 KiB unpacked, eligible for global dedup"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(kShard + "  keyed, expires 2025-08-0"), std::string::npos) << r.out;
}

// A daemon rebuilding a damaged index marks every answer; the client says
// so (Response::index_rebuilding, and a warning once on stderr).
TEST(Client, AnAnswerFromARebuildingIndexIsMarked) {
  FakeDaemon d([](const Request& r) {
    if (r.target == "/v1/status") return http(200, "{}");
    const std::string body = found(kRaw).dump();
    return Reply{
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Dedupd-Index: rebuilding\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body};
  });
  Client c(d.socket(), 5);
  EXPECT_TRUE(c.get("/v1/chunk/" + kRaw).index_rebuilding);
  EXPECT_FALSE(c.get("/v1/status").index_rebuilding);
}

TEST(Query, SingleJsonIsTheDaemonsDocument) {
  FakeDaemon d([](const Request&) { return http(200, found(kRaw).dump()); });
  auto r = run_cli(with_socket(d, {"--json", "query", kRaw}));
  ASSERT_EQ(r.code, 0) << r.err;
  Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["locations"][0]["xorb"], kXorb);
  EXPECT_EQ(doc["locations"][0]["chunk_index"], 0);
  EXPECT_EQ(doc, found(kRaw));
}

TEST(Query, UpperCaseInputIsSentNormalised) {
  FakeDaemon d([](const Request& r) {
    EXPECT_EQ(r.target, "/v1/chunk/" + kRaw);
    return http(200, found(kRaw).dump());
  });
  std::string upper = kRaw;
  for (auto& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(run_cli(with_socket(d, {"query", upper})).code, 0);
}

TEST(Query, SingleNotFoundIsExit1) {
  FakeDaemon d([](const Request&) {
    Reply rep = http(404, missing(kRaw).dump());
    return rep;
  });
  auto r = run_cli(with_socket(d, {"query", kRaw}));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not found"), std::string::npos);
  auto j = run_cli(with_socket(d, {"query", "--json", kRaw}));
  EXPECT_EQ(j.code, 1);
  EXPECT_EQ(Json::parse(j.out)["found"], false);
  auto q = run_cli(with_socket(d, {"-q", "query", kRaw}));
  EXPECT_EQ(q.code, 1);
  EXPECT_EQ(q.out, "");
}

// dedupd still knows the shards that held it, all expired: the answer says
// so instead of a bare "not found" (the README's example).
TEST(Query, SingleNotFoundWhoseShardsExpiredSaysSo) {
  FakeDaemon d([](const Request&) {
    Json doc = missing(kRaw);
    doc["expired_shards"] =
        Json::array({{{"shard", kShard}, {"keyed", true}, {"expiry", 1754664705}, {"expired_at", 1795666725}}});
    return http(404, doc.dump());
  });
  auto r = run_cli(with_socket(d, {"query", kRaw}));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(kRaw + "  not found: the only shard that held it has expired"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Shard  " + kShard + "  keyed, expired 2025-08-0"), std::string::npos) << r.out;
  auto j = run_cli(with_socket(d, {"query", "--json", kRaw}));
  EXPECT_EQ(j.code, 1);
  EXPECT_EQ(Json::parse(j.out)["expired_shards"][0]["shard"], kShard) << j.out;
}

TEST(Query, MalformedHashIs65AndNothingIsSent) {
  FakeDaemon d([](const Request&) { return http(200, "{}"); });
  auto r = run_cli(with_socket(d, {"query", kRaw, "xyz"}));
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("malformed chunk hash 'xyz'"), std::string::npos) << r.err;
  EXPECT_TRUE(d.requests().empty());
}

// Answers a batch by string templates, not a JSON library: the fake must
// not be what a 100k-hash timing measures.
Reply batch_answer(const Request& r, const std::string& missing_hash = "") {
  const std::string hit = found("HASH").dump(), miss = missing("HASH").dump();
  const std::size_t at_hit = hit.find("HASH"), at_miss = miss.find("HASH");
  std::string body = "{\"results\":[";
  body.reserve(r.body.size() / 67 * (hit.size() + 64));
  std::size_t f = 0, m = 0, pos = r.body.find('[');
  while ((pos = r.body.find('"', pos)) != std::string::npos) {
    const std::string h = r.body.substr(pos + 1, 64);
    pos += 66;
    if (f + m) body += ',';
    const bool is_missing = h == missing_hash;
    const std::string& t = is_missing ? miss : hit;
    const std::size_t at = is_missing ? at_miss : at_hit;
    body.append(t, 0, at).append(h).append(t, at + 4);
    ++(is_missing ? m : f);
  }
  body += "],\"found\":" + std::to_string(f) + ",\"missing\":" + std::to_string(m) + "}";
  return http(200, body);
}

TEST(Query, SeveralHashesGoInOnePostAndOneMissingIsExit1) {
  FakeDaemon d([](const Request& r) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/v1/chunk");
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    return batch_answer(r, kXorb);
  });
  auto r = run_cli(with_socket(d, {"query", kRaw, kXorb}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("CHUNK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kXorb + "  not found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 found, 1 missing"), std::string::npos) << r.out;
  ASSERT_EQ(d.requests().size(), 1u);
  EXPECT_EQ(Json::parse(d.requests()[0].body)["hashes"], Json({kRaw, kXorb}));

  auto j = run_cli(with_socket(d, {"query", "--json", kRaw, kXorb}));
  Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["found"], 1);
  EXPECT_EQ(doc["missing"], 1);
  EXPECT_EQ(doc["results"][0], found(kRaw));
}

TEST(Query, AllFoundIsExit0) {
  FakeDaemon d([](const Request& r) { return batch_answer(r); });
  EXPECT_EQ(run_cli(with_socket(d, {"query", kRaw, kXorb})).code, 0);
}

// The daemon's NDJSON answer to a streamed batch (one hash a line).
Reply lines_answer(const Request& r, const std::string& missing_hash = "") {
  std::string body;
  std::istringstream in(r.body);
  for (std::string h; std::getline(in, h);) {
    if (h == missing_hash)
      body += R"({"hash":")" + h +
              R"(","found":false,"locations":[]})"
              "\n";
    else
      body += R"({"hash":")" + h + R"(","found":true,"locations":[{"xorb":")" + kXorb +
              R"(","chunk_index":7}]})"
              "\n";
  }
  return http(200, body, "application/x-ndjson");
}

TEST(Query, StdinIsStreamedInOnePost) {
  std::string in;
  std::vector<std::string> hashes;
  for (std::uint64_t i = 0; i < 100'001; ++i) {
    char h[65];
    std::snprintf(h, sizeof h, "%016llx%016llx%016llx%016llx", (unsigned long long)i, 1ull, 2ull, 3ull);
    hashes.push_back(h);
    in += h;
    in += '\n';
  }
  FakeDaemon d([&](const Request& r) {
    EXPECT_EQ(r.headers.at("transfer-encoding"), "chunked");
    EXPECT_EQ(r.headers.at("content-type"), "text/plain");
    EXPECT_EQ(r.headers.at("accept"), "application/x-ndjson");
    return lines_answer(r, hashes[5]);
  });
  testing::RunOptions o;
  o.stdin_text = in;
  auto r = run_cli(with_socket(d, {"query", "--json-lines", "-"}), o);
  ASSERT_EQ(r.code, 1) << r.err;
  auto reqs = d.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].body, in);
  std::istringstream out(r.out);
  std::size_t n = 0, missing = 0;
  for (std::string line; std::getline(out, line); ++n) {
    Json doc = Json::parse(line);
    ASSERT_EQ(doc["hash"], hashes[n]);
    missing += !doc["found"].get<bool>();
  }
  EXPECT_EQ(n, hashes.size());
  EXPECT_EQ(missing, 1u);

  // The same as one document, and as short lines.
  auto j = run_cli(with_socket(d, {"--json", "query", "-"}), o);
  ASSERT_EQ(j.code, 1) << j.err;
  Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["found"], 100'000);
  EXPECT_EQ(doc["missing"], 1);
  EXPECT_EQ(doc["results"][100'000]["hash"], hashes.back());
  auto s = run_cli(with_socket(d, {"query", "--format", "short", "-"}), o);
  const std::string first = hashes[0] + " found " + kXorb + ":7\n";
  EXPECT_EQ(s.out.substr(0, first.size()), first);
  EXPECT_NE(s.out.find(hashes[5] + " missing\n"), std::string::npos);
  EXPECT_NE(d.requests().back().target.find("fields=hash,found,xorb,chunk_index"), std::string::npos);
}

// A 503 "busy" is retried, whether the body is in memory or streamed; the
// streamed one is refused before its body is sent, so it can be sent again.
TEST(Query, BusyIsRetried) {
  int calls = 0;
  FakeDaemon d([&](const Request& r) {
    if (++calls == 1) return http_error(503, "busy", "bodies in flight");
    return r.headers.count("transfer-encoding") ? lines_answer(r) : batch_answer(r);
  });
  auto r = run_cli(with_socket(d, {"query", kRaw, kXorb}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(calls, 2);

  int expects = 0;
  d.on_expect(
      [&](const Request&) { return ++expects == 1 ? http_error(503, "busy", "bodies in flight") : testing::Reply{}; });
  testing::RunOptions o;
  o.stdin_text = kRaw + "\n" + kXorb + "\n";
  r = run_cli(with_socket(d, {"query", "--json-lines", "-"}), o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(expects, 2);
  EXPECT_NE(r.out.find(kXorb), std::string::npos);
}

TEST(Query, BusyWhenGivingUpSaysBusyNotReady) {
  Response busy{503, R"({"error":{"code":"busy","message":"full"}})", "application/json"};
  EXPECT_TRUE(is_busy(busy));
  auto e = status_error(busy, "query");
  EXPECT_EQ(e.code(), 69);
  EXPECT_NE(std::string(e.what()).find("dedupd is busy"), std::string::npos) << e.what();
  Response starting{503, R"({"error":{"code":"not_ready","message":"opening"}})", "application/json"};
  EXPECT_FALSE(is_busy(starting));
  EXPECT_NE(std::string(status_error(starting, "query").what()).find("not ready"), std::string::npos);
}

// The daemon's own failures say what to do next, and are not retried: an
// admin action still queued would run twice.
TEST(Admin, DaemonFailuresSayWhatToDoAndAreNotRetried) {
  Response queued{503, R"({"error":{"code":"in_progress","message":"daemon.busy: not done"}})", "application/json"};
  EXPECT_FALSE(is_busy(queued));
  auto e = status_error(queued, "rescan");
  EXPECT_EQ(e.code(), 69);
  EXPECT_NE(std::string(e.what()).find("did not finish in time"), std::string::npos) << e.what();
  Response down{503, R"({"error":{"code":"unavailable","message":"index.no_space: disk full"}})", "application/json"};
  e = status_error(down, "purge");
  EXPECT_EQ(e.code(), 69);
  EXPECT_NE(std::string(e.what()).find("cannot do it now: index.no_space: disk full"), std::string::npos) << e.what();
  Response failed{500, R"({"error":{"code":"internal","message":"index.lmdb: MDB_CORRUPTED"}})", "application/json"};
  e = status_error(failed, "rm");
  EXPECT_EQ(e.code(), 76);
  EXPECT_NE(std::string(e.what()).find("dedupd failed: index.lmdb"), std::string::npos) << e.what();

  int calls = 0;
  FakeDaemon d([&](const Request&) {
    ++calls;
    return http_error(503, "in_progress", "daemon.busy: the work loop did not get to it");
  });
  auto r = run_cli(with_socket(d, {"rescan"}));
  EXPECT_EQ(r.code, 69) << r.err;
  EXPECT_EQ(calls, 1);
}

TEST(Query, StdinWithABadLineIs65) {
  FakeDaemon d([](const Request& r) { return lines_answer(r); });
  testing::RunOptions o;
  o.stdin_text = kRaw + "\nbad\n";
  auto r = run_cli(with_socket(d, {"query", "-"}), o);
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("stdin line 2"), std::string::npos) << r.err;
}

TEST(Query, AnswerOutOfOrderOrShortIs76) {
  FakeDaemon swapped([](const Request&) {
    Json results = {found(kXorb), found(kRaw)};
    return http(200, Json({{"results", results}, {"found", 2}, {"missing", 0}}).dump());
  });
  EXPECT_EQ(run_cli(with_socket(swapped, {"query", kRaw, kXorb})).code, 76);
  FakeDaemon short_([](const Request&) {
    return http(200, Json({{"results", {found(kRaw)}}, {"found", 1}, {"missing", 0}}).dump());
  });
  EXPECT_EQ(run_cli(with_socket(short_, {"query", kRaw, kXorb})).code, 76);
}

TEST(Query, ColourOnATerminalOnly) {
  FakeDaemon d([](const Request&) { return http(200, found(kRaw).dump()); });
  testing::RunOptions tty;
  tty.tty = true;
  EXPECT_NE(run_cli(with_socket(d, {"query", kRaw}), tty).out.find("\x1b[32mfound"), std::string::npos);
  tty.env["NO_COLOR"] = "1";
  EXPECT_EQ(run_cli(with_socket(d, {"query", kRaw}), tty).out.find("\x1b["), std::string::npos);
}

// ---- broken daemons ----------------------------------------------------

TEST(Broken, GarbageIs76) {
  FakeDaemon d([](const Request&) { return http(200, "this is not json"); });
  auto r = run_cli(with_socket(d, {"query", kRaw}));
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("malformed JSON"), std::string::npos) << r.err;
}

TEST(Broken, NotHttpAtAllIs76) {
  FakeDaemon d([](const Request&) {
    Reply rep;
    rep.raw = "SSH-2.0-OpenSSH_9.2\r\n";
    rep.close_after = true;
    return rep;
  });
  EXPECT_EQ(run_cli(with_socket(d, {"stats"})).code, 76);
}

TEST(Broken, MissingFieldIs76) {
  FakeDaemon d([](const Request&) {
    Json doc = found(kRaw);
    doc["locations"][0].erase("xorb");
    return http(200, doc.dump());
  });
  auto r = run_cli(with_socket(d, {"query", kRaw}));
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("\"xorb\""), std::string::npos) << r.err;
}

TEST(Broken, TruncatedBodyIs76) {
  FakeDaemon d([](const Request&) {
    Reply rep = http(200, found(kRaw).dump());
    rep.raw.resize(rep.raw.size() - 40);
    rep.close_after = true;
    return rep;
  });
  auto r = run_cli(with_socket(d, {"query", kRaw}));
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("in the middle of its answer"), std::string::npos) << r.err;
}

TEST(Broken, ClosedWithoutAnswerIs76) {
  FakeDaemon d([](const Request&) {
    Reply rep;
    rep.close_after = true;
    return rep;
  });
  auto r = run_cli(with_socket(d, {"status"}));
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("without answering"), std::string::npos) << r.err;
}

TEST(Broken, SilenceTimesOutAs69WithoutHanging) {
  FakeDaemon d([](const Request&) {
    Reply rep;
    rep.hang = true;
    return rep;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_cli(with_socket(d, {"--timeout", "0.5", "stats"}));
  auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 69);
  EXPECT_NE(r.err.find("did not answer within 0.5 s"), std::string::npos) << r.err;
  EXPECT_LT(s, 3.0);
}

TEST(Broken, StoppingMidAnswerTimesOutAs76) {
  FakeDaemon d([](const Request&) {
    Reply rep = http(200, found(kRaw).dump());
    rep.raw.resize(rep.raw.size() - 10);
    rep.hang = true;
    return rep;
  });
  auto r = run_cli(with_socket(d, {"--timeout", "0.5", "query", kRaw}));
  EXPECT_EQ(r.code, 76);
}

TEST(Broken, UnexpectedStatusIs76And503Is69) {
  FakeDaemon d500([](const Request&) { return http_error(500, "internal", "boom"); });
  auto r = run_cli(with_socket(d500, {"stats"}));
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("boom"), std::string::npos);
  FakeDaemon d503([](const Request&) { return http_error(503, "not_ready", "index opening"); });
  auto n = run_cli(with_socket(d503, {"stats"}));
  EXPECT_EQ(n.code, 69);
  EXPECT_NE(n.err.find("not ready"), std::string::npos) << n.err;
}

TEST(Broken, DaemonRefusingInputIs65) {
  FakeDaemon d([](const Request&) { return http_error(400, "bad_request", "malformed hash"); });
  auto r = run_cli(with_socket(d, {"xorb", kXorb}));
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("malformed hash [bad_request]"), std::string::npos) << r.err;
}

// ---- reaching the socket ------------------------------------------------

TEST(Socket, NoSocketIs69AndSaysHowToStart) {
  testing::TempDir dir;
  auto r = run_cli({"--socket", dir / "none.sock", "status"});
  EXPECT_EQ(r.code, 69);
  EXPECT_NE(r.err.find("no socket at " + (dir / "none.sock")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("point --socket / DEDUPD_SOCKET at another"), std::string::npos) << r.err;
}

// The hint names what brings back the dedupd behind each default socket:
// the package's socket unit, or the checkout's ./dev run.
TEST(Socket, NoSocketNamesTheUnitOrDevRun) {
  auto packaged = run_cli({"--socket", "/run/dedupd/dedupd.sock", "status"});
  EXPECT_EQ(packaged.code, 69);
  EXPECT_NE(packaged.err.find("no socket at /run/dedupd/dedupd.sock"), std::string::npos) << packaged.err;
  EXPECT_NE(packaged.err.find("systemctl start dedupd.socket"), std::string::npos) << packaged.err;
  EXPECT_EQ(packaged.err.find("./dev run"), std::string::npos) << packaged.err;
  auto local = run_cli({"--socket", "./local/dedupd.sock", "status"});
  EXPECT_EQ(local.code, 69);
  EXPECT_NE(local.err.find("./dev run"), std::string::npos) << local.err;
  EXPECT_EQ(local.err.find("systemctl"), std::string::npos) << local.err;
}

TEST(Socket, EnvironmentNamesTheSocket) {
  FakeDaemon d([](const Request&) { return http(200, found(kRaw).dump()); });
  testing::RunOptions o;
  o.env["DEDUPD_SOCKET"] = d.socket();
  EXPECT_EQ(run_cli({"query", kRaw}, o).code, 0);
}

TEST(Socket, StaleSocketIs69) {
  testing::TempDir dir;
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, (dir / "s").c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(fd);  // bound, never listened: connect() is refused
  auto r = run_cli({"--socket", dir / "s", "stats"});
  EXPECT_EQ(r.code, 69);
  EXPECT_NE(r.err.find("stale socket"), std::string::npos) << r.err;
}

TEST(Socket, NotASocketIs69) {
  testing::TempDir dir;
  testing::write_file(dir / "f", "");
  EXPECT_EQ(run_cli({"--socket", dir / "f", "stats"}).code, 69);
}

TEST(Socket, PermissionDeniedIs77AndNamesTheGroup) {
  FakeDaemon d([](const Request&) { return http(200, "{}"); });
  ::chmod(std::filesystem::path(d.socket()).parent_path().c_str(), 0755);
  if (geteuid() != 0) {
    ASSERT_EQ(::chmod(d.socket().c_str(), 0), 0);
    auto r = run_cli({"--socket", d.socket(), "stats"});
    EXPECT_EQ(r.code, 77);
    EXPECT_NE(r.err.find("permission denied on"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("usermod -aG"), std::string::npos) << r.err;
    return;
  }
  // Root ignores socket permissions: ask as nobody, in a child.
  ASSERT_EQ(::chown(d.socket().c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(d.socket().c_str(), 0660), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(100);
    auto r = run_cli({"--socket", d.socket(), "stats"});
    const bool names_group =
        r.err.find("group root, mode 0660") != std::string::npos && r.err.find("usermod -aG root") != std::string::npos;
    _exit(r.code == 77 && names_group ? 0 : r.code == 77 ? 101 : 102);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "100: setuid failed, 101: 77 without the group, 102: wrong exit code";
}

TEST(Socket, ClosedDirectoryIs77) {
  if (geteuid() == 0) GTEST_SKIP() << "root traverses any directory";
  FakeDaemon d([](const Request&) { return http(200, "{}"); });
  const std::string dir = std::filesystem::path(d.socket()).parent_path();
  ::chmod(dir.c_str(), 0);
  auto r = run_cli({"--socket", d.socket(), "stats"});
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(r.code, 77) << r.err;
}

}  // namespace
}  // namespace dedupctl
