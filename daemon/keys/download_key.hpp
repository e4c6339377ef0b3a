// The key the local Xet endpoint's range URLs are signed with
// (daemon/answers/download_grants.hpp): 32 random bytes in the state
// directory, or the file xet_endpoint.downloads.key_file names (a fleet's
// cache tier shares one), made at the first start and kept, so range URLs
// handed out before a restart still verify after it. Never rotated on its
// own: a new key only refuses outstanding URLs (their clients ask again).
#pragma once

#include <filesystem>

#include "base/result.hpp"
#include "daemon/answers/download_grants.hpp"

namespace dedupd::daemon::keys {

// Reads the key (64 hex digits), or makes and stores one (0600, by rename)
// when there is none or it is unreadable; a rule "xet_download.key" error
// when neither can be done.
base::Result<answers::DownloadKey> load_or_create_download_key(const std::filesystem::path& file);

}  // namespace dedupd::daemon::keys
