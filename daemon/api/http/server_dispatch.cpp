// A request's way out: its handler run, on this HTTP thread or off it
// (admin work, and reads that may wait on the fleet, on their job queues),
// and its answer queued to MHD as a buffer, a file, a stream or a pipe (a
// body the handler's job writes after answering), with the room a large
// one holds and the request counted in the metrics.
#include <fcntl.h>
#include <microhttpd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <exception>

#include "daemon/api/http/body_pipe.hpp"
#include "daemon/api/http/server_core.hpp"

namespace dedupd::daemon::api::http {

namespace {

void free_body(void* cls) { delete static_cast<std::string*>(cls); }

// A streamed answer (chunked transfer): MHD asks for the next bytes when
// the socket can take them.
ssize_t read_stream(void* cls, std::uint64_t, char* buf, std::size_t max) {
  auto& stream = *static_cast<std::shared_ptr<BodyStream>*>(cls);
  try {
    auto n = stream->read(buf, max);
    if (!n) {
      spdlog::error("api: answer stopped part-way: {}", n.error().to_string());
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return *n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : ssize_t(*n);
  } catch (const std::exception& e) {
    spdlog::error("api: answer stopped part-way: {}", e.what());
    return MHD_CONTENT_READER_END_WITH_ERROR;
  }
}

void free_stream(void* cls) { delete static_cast<std::shared_ptr<BodyStream>*>(cls); }

// A piped answer: its body as a thread of the handler's writes it.
struct PipeReader {
  std::shared_ptr<BodyPipe> pipe;
  MHD_Connection* conn;
};

// MHD runs this on the HTTP thread that serves the connection, with the
// whole thread pool's other connections waiting on it: it never waits.
// With nothing to send it suspends the connection, which is what MHD
// 0.9.75 allows here: returning 0 alone makes it call again at once
// (internal polling: a busy loop, microhttpd.h's content reader notes),
// and MHD_suspend_connection is documented safe from a content reader; a
// suspended connection is out of the epoll set, and its next MHD_resume_
// connection (the pipe's waker, on the writer's thread) brings it back,
// where MHD calls this again. The pipe calls the suspension under its
// lock and the waker only after it, so a resume never comes first (which
// MHD leaves undefined). Suspended connections never time out; a
// writer's wait has its own bound (the fill's storage timeouts) and
// stop() makes it give up, which wakes the reader: MHD must not stop
// with a connection suspended.
ssize_t read_pipe(void* cls, std::uint64_t, char* buf, std::size_t max) {
  auto& reader = *static_cast<PipeReader*>(cls);
  auto read = reader.pipe->read(buf, max, [&reader] { MHD_suspend_connection(reader.conn); });
  switch (read.got) {
    case BodyPipe::Got::bytes:
      return ssize_t(read.n);
    case BodyPipe::Got::not_yet:
      return 0;
    case BodyPipe::Got::end:
      return MHD_CONTENT_READER_END_OF_STREAM;
    case BodyPipe::Got::error:
      break;
  }
  // The connection closes short of the Content-Length: nginx keeps nothing.
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

void free_pipe(void* cls) {
  auto* reader = static_cast<PipeReader*>(cls);
  reader->pipe->close();
  delete reader;
}

}  // namespace

Response ServerCore::busy(std::uint64_t cap) {
  auto r = error(kNotReady, "busy",
                 fmt::format("request and answer bodies in flight already use the {} bytes the server "
                             "holds for them at once; retry",
                             cap));
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

enum MHD_Result ServerCore::dispatch(MHD_Connection* conn, RequestState& st) {
  if (st.early) return respond(conn, st, std::move(*st.early));
  if (st.dropped == RequestState::Dropped::too_large)
    return respond(conn, st,
                   error(kTooLarge, fmt::format("body is over the limit of {} bytes for {} {}", st.body_limit,
                                                st.request.method, st.request.path)));
  if (st.dropped == RequestState::Dropped::busy) {
    if (st.drop_message.empty()) return respond(conn, st, busy(bodies.cap(st.body_kind)));
    auto r = error(kNotReady, "busy", st.drop_message + "; retry");
    r.headers.emplace_back("Retry-After", "1");
    return respond(conn, st, std::move(r));
  }
  if (st.dropped == RequestState::Dropped::bad_body) return respond(conn, st, error(kBadRequest, st.drop_message));
  if (st.parser) {
    if (!st.parser->finish(*st.spool)) return respond(conn, st, error(kBadRequest, st.parser->error()));
    st.request.hashes = std::move(st.spool);
    st.parser.reset();
  }
  JobQueue* jobs = nullptr;
  if (st.entry->access == http::Access::admin) jobs = admin_jobs.get();
  else if (st.entry->wait == http::Wait::work ||
           (st.entry->wait == http::Wait::fleet && context.answers.fleet().configured()))
    jobs = read_jobs.get();
  else if (st.entry->wait == http::Wait::storage) jobs = storage_jobs.get();
  if (!jobs) return respond(conn, st, run_handler(*st.entry, st.request));

  switch (st.off_thread) {
    case RequestState::OffThread::idle: {
      st.off_thread = RequestState::OffThread::running;
      MHD_suspend_connection(conn);
      jobs->post([this, conn, &st] {
        // The job's own: once the handler has answered (answer_now) the
        // connection may end, its state with it, before the handler does.
        Request request = std::move(st.request);
        const MethodEntry& entry = *st.entry;
        bool answered = false;
        request.answer_now = [conn, &st, &answered](Response&& r) {
          if (answered) return;
          answered = true;
          st.off_thread_result = std::move(r);
          st.off_thread = RequestState::OffThread::done;
          MHD_resume_connection(conn);
        };
        request.stopping = stopping.get_token();
        Response r = run_handler(entry, request);
        request.answer_now(std::move(r));
      });
      return MHD_YES;
    }
    case RequestState::OffThread::running:  // not expected: suspended until done
      return MHD_YES;
    case RequestState::OffThread::done:
      return respond(conn, st, std::move(st.off_thread_result));
  }
  return MHD_NO;
}

Response ServerCore::run_handler(const MethodEntry& entry, Request& request) {
  try {
    return entry.handler(context, request);
  } catch (const std::exception& e) {
    spdlog::error("api: {} {}: {}", request.method, request.path, e.what());
    return error(kInternal, "internal error (logged)");
  }
}

enum MHD_Result ServerCore::respond(MHD_Connection* conn, RequestState& st, Response&& r) {
  // The handler is done with the body: free it and its room now, not when
  // MHD has sent the answer, so a client that sends its next request as
  // soon as it reads this one finds the room free.
  std::vector<std::uint8_t>().swap(st.request.body);
  st.request.hashes.reset();  // the answer holds it, if it needs it
  // A streamed answer keeps its room until it is sent (on_completed).
  if (!r.stream) {
    bodies.give(st.charged);
    st.charged = 0;
  }
  // A large answer is held until the client has read it (a 100,000-hash
  // batch answer is ~10 MB); one that does not read would otherwise make
  // its query cost that much for as long as it keeps the connection. So it
  // takes room like a request body; small ones fit in the socket buffer.
  if (!r.file && !r.stream && !r.pipe && r.body.size() > kSmallAnswerBytes) {
    if (bodies.take(st.body_kind, r.body.size())) st.charged = r.body.size();
    else r = busy(bodies.cap(st.body_kind));
  }
  MHD_Response* resp = nullptr;
  if (r.file) {
    // A file body (an export): MHD reads it with pread/sendfile and closes
    // its own descriptor when done; ours goes with the last Response copy.
    int fd = ::fcntl(r.file->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return MHD_NO;
    resp = MHD_create_response_from_fd64(r.file->size, fd);
    if (!resp) {
      ::close(fd);
      return MHD_NO;
    }
  } else if (r.pipe) {
    auto* reader = new PipeReader{std::move(r.pipe), conn};
    reader->pipe->set_waker([conn] { MHD_resume_connection(conn); });
    resp = MHD_create_response_from_callback(reader->pipe->length(), kPipeBlockBytes, &read_pipe, reader, &free_pipe);
    if (!resp) {
      free_pipe(reader);
      return MHD_NO;
    }
  } else if (r.stream) {
    auto* stream = new std::shared_ptr<BodyStream>(std::move(r.stream));
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamBlockBytes, &read_stream, stream, &free_stream);
    if (!resp) {
      delete stream;
      return MHD_NO;
    }
  } else {
    auto* body = new std::string(std::move(r.body));
    resp = MHD_create_response_from_buffer_with_free_callback_cls(body->size(), body->data(), &free_body, body);
    if (!resp) {
      delete body;
      return MHD_NO;
    }
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [k, v] : r.headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  if (service.index_rebuilding()) MHD_add_response_header(resp, "X-Dedupd-Index", "rebuilding");
  st.status = r.status;
  enum MHD_Result ok = MHD_queue_response(conn, r.status, resp);
  MHD_destroy_response(resp);
  // Counted when queued, so a client that reads /metrics right after a
  // response always sees it counted.
  metrics.record(st.route_id, st.status, Clock::now() - st.start);
  return ok;
}

}  // namespace dedupd::daemon::api::http
