// A request's way in: the route matched, the access checked, an announced
// body refused before any of it is read when it is over its limit or the
// room, and the body taken as it arrives (a hash batch parsed into its
// spool), or dropped and drained.
#include <microhttpd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <exception>

#include "daemon/api/http/server_core.hpp"

namespace dedupd::daemon::api::http {

namespace {

enum MHD_Result query_collector(void* cls, enum MHD_ValueKind, const char* key, const char* value) {
  auto* out = static_cast<std::vector<std::pair<std::string, std::string>>*>(cls);
  out->emplace_back(key ? key : "", value ? value : "");
  return MHD_YES;
}

}  // namespace

enum MHD_Result ServerCore::on_request(void* cls, MHD_Connection* conn, const char* url, const char* method,
                                       const char*, const char* upload_data, size_t* upload_data_size, void** con_cls) {
  auto* self = static_cast<ServerCore*>(cls);
  auto* st = static_cast<RequestState*>(*con_cls);
  try {
    if (!st) {
      st = new RequestState;
      *con_cls = st;
      self->connections.request_started(connection_entry(conn));
      return self->first_call(conn, *st, url, method);
    }
    if (*upload_data_size > 0) {
      std::size_t n = *upload_data_size;
      *upload_data_size = 0;
      return self->receive(*st, upload_data, n);
    }
    return self->dispatch(conn, *st);
  } catch (const std::exception& e) {
    spdlog::error("api: {} {}: {}", method, url, e.what());
  }
  // Out of memory or similar: try a 500, else drop the connection.
  try {
    if (st) return self->respond(conn, *st, error(kInternal, "internal error"));
  } catch (const std::exception&) {
  }
  return MHD_NO;
}

enum MHD_Result ServerCore::refuse(MHD_Connection* conn, RequestState& st, Response&& r) {
  const char* length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  bool has_body = (length && std::string_view(length) != "0") ||
                  MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  // With a body pending, answer now so it is never read (MHD then closes
  // the connection); without one, answer on the next call and keep it.
  if (has_body) return respond(conn, st, std::move(r));
  st.early = std::move(r);
  return MHD_YES;
}

enum MHD_Result ServerCore::first_call(MHD_Connection* conn, RequestState& st, const char* url, const char* method) {
  Match m = router.match(url, method);
  if (!m.route) return refuse(conn, st, error(kNotFound, fmt::format("no route {}", url)));
  st.route_id = m.route->id;
  if (!m.entry) {
    auto r = error(kMethodNotAllowed, fmt::format("{} does not take {}", m.route->path, method));
    r.headers.emplace_back("Allow", Router::allow(*m.route));
    return refuse(conn, st, std::move(r));
  }
  st.entry = m.entry;
  st.body_kind = m.entry->body;
  st.body_limit = body_limit(st.body_kind);

  // Refuse an announced oversized body before reading any of it (curl and
  // most clients wait for "100 Continue", which is then never sent).
  const char* length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  std::uint64_t announced = 0;
  if (length) {
    std::string_view s(length);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), announced);
    if (ec != std::errc() || p != s.data() + s.size())
      return refuse(conn, st, error(kBadRequest, "bad Content-Length"));
    if (announced > st.body_limit)
      return refuse(conn, st,
                    error(kTooLarge, fmt::format("body of {} bytes is over the limit of {} for {} {}", announced,
                                                 st.body_limit, method, m.route->path)));
  }

  if (const char* type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))
    st.request.content_type = type;
  if (const char* accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT))
    st.request.accept = accept;
  if (const char* via = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, ::dedupd::api::kViaHeader.data()))
    st.request.via = via;
  if (const char* cas = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, ::dedupd::api::kCasHeader.data()))
    st.request.cas = cas;
  for (std::string_view name : http::kRouteHeaders)
    if (const char* v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, std::string(name).c_str()))
      st.request.headers.emplace_back(name, v);

  // Admin access is decided before the body is received.
  if (m.entry->access != http::Access::read) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    std::optional<PeerCred> peer = info ? peer_of(info->connect_fd) : std::nullopt;
    if (!peer || !may_use(*peer, m.entry->access)) {
      std::string who = peer ? fmt::format("uid {}", peer->uid) : std::string("unknown peer");
      const char* needs = m.entry->access == http::Access::admin ? "root or the admin group"
                                                                 : "the local Xet endpoint (xet_endpoint.group)";
      return refuse(conn, st, error(kForbidden, fmt::format("{} needs {} ({})", m.route->path, needs, who)));
    }
  }

  // Room for the body is taken as its bytes arrive, so holding room costs
  // a client the sending of them; one that could not fit now is told so
  // before it sends anything.
  if (st.body_kind == Body::hashes) {
    // Any size: the body goes through the parser into the spool as it
    // arrives; what the request holds is fixed and taken up front.
    if (!bodies.take(st.body_kind, kHashStreamBytes)) return refuse(conn, st, busy(bodies.cap(st.body_kind)));
    st.charged = kHashStreamBytes;
    st.spool = std::make_shared<HashSpool>(options.spool_dir);
    st.parser = std::make_unique<HashStreamParser>(HashStreamParser::form_of(st.request.content_type));
    announced = 0;
  }
  if (announced > 0 && !bodies.fits(st.body_kind, announced)) return refuse(conn, st, busy(bodies.cap(st.body_kind)));

  st.request.method = method;
  st.request.path = url;
  st.request.tail = std::string(m.tail);
  MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, &query_collector, &st.request.query);
  // Reserve for typical bodies only: a client announcing the maximum and
  // then trickling must not pin that much memory per connection up front.
  if (announced > 0) st.request.body.reserve(std::size_t(std::min<std::uint64_t>(announced, 16u << 20)));

  // Answer on the next call, once MHD has the whole request: a response
  // queued before that makes MHD close the connection (no keep-alive).
  return MHD_YES;
}

std::size_t ServerCore::body_limit(Body kind) const {
  switch (kind) {
    case Body::none:
      return kStrayBodyBytes;
    case Body::upload:
      return options.max_body_bytes;
    case Body::hashes:
      return SIZE_MAX;
  }
  return kStrayBodyBytes;
}

enum MHD_Result ServerCore::receive(RequestState& st, const char* data, std::size_t n) {
  st.received += n;
  if (st.parser) {
    if (st.dropped == RequestState::Dropped::no && !st.parser->feed(std::string_view(data, n), *st.spool)) {
      const bool spool_failed = !st.spool->error().empty();
      st.drop_message = spool_failed ? st.spool->error() : st.parser->error();
      drop_body(st, spool_failed ? RequestState::Dropped::busy : RequestState::Dropped::bad_body);
    }
  } else if (st.dropped == RequestState::Dropped::no) {
    if (st.received > st.body_limit) {
      drop_body(st, RequestState::Dropped::too_large);
    } else if (!bodies.take(st.body_kind, n)) {
      drop_body(st, RequestState::Dropped::busy);
    } else {
      st.charged += n;
      st.request.body.insert(st.request.body.end(), data, data + n);
    }
  }
  if (st.dropped != RequestState::Dropped::no && st.received > st.dropped_at + kDrainBytes) {
    spdlog::debug("api: {} {}: closing the connection, its body goes on after it was refused", st.request.method,
                  st.request.path);
    return MHD_NO;
  }
  return MHD_YES;
}

void ServerCore::drop_body(RequestState& st, RequestState::Dropped why) {
  st.dropped = why;
  // Past the limit, the drain is counted from the limit itself.
  st.dropped_at = why == RequestState::Dropped::too_large ? st.body_limit : st.received;
  st.spool.reset();
  std::vector<std::uint8_t>().swap(st.request.body);
  bodies.give(st.charged);
  st.charged = 0;
}

}  // namespace dedupd::daemon::api::http
