// The endpoint's downloads (core::XetDownloadStatus) as /v1/status's
// "xet_downloads" and as /metrics' dedupd_xet_download_* families
// (docs/OPERATIONS.md, "Monitoring").
#pragma once

#include <optional>

#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/core/status.hpp"

namespace dedupd::daemon::api::render {

// The share of the bytes sent to clients that came from the local cache;
// nullopt before any.
std::optional<double> local_hit_ratio(const core::XetDownloadCounts& n);

Json xet_downloads_json(const core::XetDownloadStatus& d);

void write_xet_download_metrics(http::PromWriter& w, const core::XetDownloadStatus& d);

}  // namespace dedupd::daemon::api::render
