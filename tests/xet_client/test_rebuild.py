#!/usr/bin/env python3
"""A damaged index is rebuilt with what the endpoint taught (issue 59;
docs/OPERATIONS.md, "When things go wrong"): a shard learned through the
local Xet endpoint lives in no watched directory, only in the copy dedupd
keeps in state_dir/learned/. The real client uploads through the endpoint's
nginx; the index is then truncated while dedupd is down, and the dedupd
that starts moves it aside and rebuilds it, the learned shard included,
with its CAS: the next host's upload of the same file sends nothing."""

import json
import os

import harness

TOKEN = "hf_rebuildHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_rebuildCasToken0123456789abcdef"
REPO = "dedupd/rebuild"
MIB = 1024 * 1024


class Rebuild(harness.EndpointTest):
    def test_a_rebuilt_index_learns_again_what_the_endpoint_taught(self):
        settings = self.path("endpoint-settings", "xet-endpoint.conf")
        yaml = harness.endpoint_yaml(settings)
        dedupd = harness.RealClientTest.dedupd(self, [self.path("incoming")], yaml)
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.xet_endpoint(hub, dedupd.socket, self.tls["ca"])
        harness.write(settings, ("hub_upstream = %s\ncas_upstream = %s\nhub_port = %d\ncas_port = %d\n"
                                 % (hub.endpoint, hub.cas_url, ep.hub_port, ep.cas_port)).encode())
        a = harness.HubClient(self.path("host-a"), ep.endpoint, TOKEN, self.tls["ca"])
        a.run("create-repo", REPO)
        src = harness.write(self.path("src", "model.bin"), harness.random_bytes(6 * MIB, 91))
        a.run("upload-file", REPO, "model.bin", src)
        harness.wait_for("the upload learned",
                         lambda: dedupd.json("/v1/status")["xet_endpoint"]["learning"]["learned"] >= 1, timeout=20)
        learned = [s for s in dedupd.shards() if hub.cas_url in (s.get("cas") or "").split()]
        self.assertEqual(len(learned), 1, dedupd.shards())
        copies = dedupd.json("/v1/status")["index_health"]["learned_copies"]
        self.assertEqual(copies["files"], 1, copies)
        self.assertGreater(copies["bytes"], 0)
        entries = dedupd.json("/v1/stats")["chunks"]

        # The index damaged while dedupd is down: cut after its meta pages
        # (the file is as large as the map; what it uses is far less).
        dedupd.stop()
        data = os.path.join(dedupd.root, "state", "index", "data.mdb")
        os.truncate(data, 3 * 4096)
        dedupd = harness.Dedupd(dedupd.root, [self.path("incoming")], yaml)
        self.procs.append(dedupd)
        harness.wait_for("the index rebuilt",
                         lambda: dedupd.json("/v1/status")["index_health"]["state"] == "rebuilt", timeout=30)
        health = dedupd.json("/v1/status")["index_health"]
        self.assertIn("truncated", health["damage"])
        self.assertTrue(os.path.exists(os.path.join(health["moved_to"], "data.mdb")), health)
        again = [s for s in dedupd.shards() if hub.cas_url in (s.get("cas") or "").split()]
        self.assertEqual([s["hash"] for s in again], [s["hash"] for s in learned], "the learned shard, with its CAS")
        self.assertEqual(dedupd.json("/v1/stats")["chunks"], entries)
        self.assertEqual(json.loads(dedupd.ctl("scan", "--json", src).stdout)["total"]["new_bytes"], 0)

        # The new sockets, for nginx's user (as the first start's were).
        ep.grant(dedupd.socket)
        ep.grant(os.path.join(dedupd.root, "dedupd-learn.sock"))
        # Another host, empty cache: its queries are answered here, it sends nothing.
        hub.reset()
        harness.HubClient(self.path("host-b"), ep.endpoint, TOKEN, self.tls["ca"]).run(
            "upload-file", REPO, "copy.bin", src)
        state = hub.state()
        self.assertEqual(state["xorb_chunk_bytes"], 0)
        self.assertEqual(state["rejected"], [])


if __name__ == "__main__":
    harness.main()
