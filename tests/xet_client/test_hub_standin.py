#!/usr/bin/env python3
"""The Hub stand-in (hub_standin.py) with the real clients and no endpoint
between them: huggingface_hub 2.4.0 with hf_xet uploads through
HfApi.upload_file, upload_folder and `hf upload`, downloads through
hf_hub_download, byte for byte, over HTTPS with a test CA. This is the
upstream the endpoint tests put nginx in front of; if these fail, those
prove nothing."""

import hashlib
import os

import harness

TOKEN = "hf_standinHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_standinCasToken0123456789abcdef"
REPO = "dedupd/endpoint-test"


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class HubStandinWithTheRealClients(harness.RealClientTest):
    def setUp(self):
        super().setUp()
        self.tls = harness.make_test_ca(self.path("tls"))
        self.hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)

    def client(self, name="user", ca=None, token=TOKEN):
        return harness.HubClient(self.path(name), self.hub.endpoint, token, ca or self.tls["ca"])

    def test_uploads_by_every_route_then_downloads_byte_identical(self):
        c = self.client()
        c.run("create-repo", REPO)
        big = harness.write(self.path("src", "model.bin"), harness.random_bytes(3 * 1024 * 1024, 41))
        c.run("upload-file", REPO, "model.bin", big)
        after_first = self.hub.state()
        self.assertEqual(after_first["rejected"], [])
        self.assertEqual(after_first["xorb_chunk_bytes"], 3 * 1024 * 1024)

        # A folder: random, a copy of the first file, small text, empty.
        folder = self.path("folder")
        with open(big, "rb") as f:
            big_bytes = f.read()
        harness.write(os.path.join(folder, "weights", "other.bin"), harness.random_bytes(1024 * 1024, 42))
        harness.write(os.path.join(folder, "copy.bin"), big_bytes)
        harness.write(os.path.join(folder, "README.md"), b"a small text file\n")
        harness.write(os.path.join(folder, "empty.txt"), b"")
        self.hub.reset()
        c.run("upload-folder", REPO, folder)
        # Only the new megabyte went up: the copy dedups against the
        # client's own cache.
        self.assertEqual(self.hub.state()["xorb_chunk_bytes"], 1024 * 1024)

        edited = harness.write(self.path("src", "edited.bin"), big_bytes[:1024 * 1024] + b"edit" +
                               big_bytes[1024 * 1024:])
        r = c.hf("upload", REPO, edited, "edited.bin")
        self.assertIn("Uploaded", r.stdout)

        hub = self.hub.hub()
        self.assertEqual(hub["unauthorized"], 0)
        self.assertEqual(hub["routes"].get("lfs-batch", 0), 0, "the client took the legacy LFS path")
        for route in ("preupload", "xet-write-token", "commit"):
            self.assertGreaterEqual(hub["routes"].get(route, 0), 3, (route, hub["routes"]))
        files = hub["repos"]["models/" + REPO]["files"]
        self.assertEqual(sorted(files), ["README.md", "copy.bin", "edited.bin", "empty.txt", "model.bin",
                                         "weights/other.bin"])
        self.assertNotIn("xet", files["README.md"])  # regular files are in the commit itself
        self.assertIn("xet", files["model.bin"])

        # A second user (another HF_HOME and Xet cache) downloads them all.
        other = self.client("other")
        sources = {"model.bin": big, "copy.bin": big, "edited.bin": edited,
                   "weights/other.bin": os.path.join(folder, "weights", "other.bin"),
                   "README.md": os.path.join(folder, "README.md"), "empty.txt": os.path.join(folder, "empty.txt")}
        for name, src in sources.items():
            got = other.run("download", REPO, name, self.path("download"))
            self.assertEqual(got["sha256"], sha256_of(src), name)
            self.assertEqual(got["size"], os.path.getsize(src), name)
        hub = self.hub.hub()
        self.assertGreaterEqual(hub["routes"].get("resolve", 0), len(sources))
        self.assertGreaterEqual(hub["routes"].get("xet-read-token", 0), 1)
        self.assertEqual(self.hub.state()["rejected"], [])

    def test_a_wrong_token_is_refused_by_the_hub(self):
        c = self.client(token="hf_notTheToken")
        f = harness.write(self.path("x.bin"), harness.random_bytes(100000, 43))
        r = c.run("upload-file", REPO, "x.bin", f, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("401", r.stderr)
        self.assertGreater(self.hub.hub()["unauthorized"], 0)

    def test_a_client_that_does_not_trust_the_test_ca_refuses_to_talk(self):
        other_ca = harness.make_test_ca(self.path("other-tls"))
        c = self.client(ca=other_ca["ca"])
        r = c.run("create-repo", REPO, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("CERTIFICATE_VERIFY_FAILED", r.stderr)
        self.assertEqual(self.hub.hub()["routes"], {})


if __name__ == "__main__":
    harness.main()
