// The CAS a shard belongs to: its URL in one normal form, and the
// directory name the Xet client gives its cache of that CAS, so a shard found
// in a client's cache can say which CAS it came from.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dedupd::xetcache {

// "http(s)://host[:port][/path]" with the scheme and host in lower case, no
// default port (80, 443), no trailing slash: the form dedupd stores and
// compares. nullopt for anything else (another scheme, no host, user info,
// a query or fragment, spaces or control characters): a scope is compared
// as a string, so only one spelling of each CAS may get in.
std::optional<std::string> normalize_cas_url(std::string_view url);

// The name of the directory the Xet client keeps a CAS's cache under
// (<cache root>/<name>/shard-cache/...), from the CAS URL exactly as the
// client was given it: its first 16 characters with each one that is not
// an ASCII letter or digit as '_', a '-', then the first 16 characters of
// the URL-safe base64 of the Xet data hash of the URL's bytes. xet-core's
// rule (compute_cache_path); checked against the names hf_xet 1.8.0 made
// (tests/unit/xetcache/cas_url_test.cpp). The hash is one-way: a name is
// matched against the URLs one knows (daemon/ingest/cas_scope.hpp).
std::string client_cache_dir_name(std::string_view url_as_given);

}  // namespace dedupd::xetcache
