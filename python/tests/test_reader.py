"""Container reader: refusals of malformed containers, and the CLI/WHID round trip."""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    from . import _paths
except ImportError:
    import _paths

import numpy as np

from waste_ref import hidden_dump
from waste_ref.container import Container, ContainerError


def fixture(name="tiny"):
    return os.path.join(_paths.FIXTURES, name + ".waste")


class Refusals(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="waste_ref_")
        self.dir = os.path.join(self.tmp, "m.waste")
        shutil.copytree(fixture(), self.dir)
        for f in os.listdir(self.dir):
            os.chmod(os.path.join(self.dir, f), 0o644)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit_manifest(self, fn):
        p = os.path.join(self.dir, "manifest.json")
        with open(p) as f:
            m = json.load(f)
        fn(m)
        with open(p, "w") as f:
            json.dump(m, f)

    def patch(self, fname, off, data):
        with open(os.path.join(self.dir, fname), "r+b") as f:
            f.seek(off)
            f.write(data)

    def test_opens_with_crc(self):
        c = Container(self.dir, verify_crc=True)
        for L in (1, 2, 3):
            for e in range(8):
                gate, up, down = c.expert(L, e)
                self.assertEqual(gate.shape, (64, 128))
                self.assertEqual(down.shape, (128, 64))

    def test_format_version(self):
        self.edit_manifest(lambda m: m.update(format_version=1))
        with self.assertRaisesRegex(ContainerError, "format_version"):
            Container(self.dir)
        self.edit_manifest(lambda m: m.pop("format_version"))
        with self.assertRaisesRegex(ContainerError, "format_version"):
            Container(self.dir)

    def test_truncated_bank(self):
        with open(os.path.join(self.dir, "experts-L2.bin"), "r+b") as f:
            f.truncate(4096 * 20)
        with self.assertRaisesRegex(ContainerError, "experts-L2.bin"):
            Container(self.dir)

    def test_bad_file_name(self):
        self.edit_manifest(lambda m: m["layers"]["1"].update(file="../experts-L1.bin"))
        with self.assertRaisesRegex(ContainerError, "plain name"):
            Container(self.dir)

    def test_missing_layer(self):
        self.edit_manifest(lambda m: m["layers"].pop("3"))
        with self.assertRaisesRegex(ContainerError, "MoE layers"):
            Container(self.dir)

    def test_vq4p_mismatch(self):
        self.edit_manifest(lambda m: m["expert_quant"].update(fmt="VQ4P", stages=4, entries=64, index_bits=6))
        with self.assertRaises(ContainerError):
            Container(self.dir)

    def test_expert_magic_and_identity(self):
        R = 98304 // 8
        self.patch("experts-L1.bin", 3 * R, b"XXXX")
        self.patch("experts-L2.bin", 5 * R + 6, struct.pack("<H", 4))
        c = Container(self.dir)
        with self.assertRaisesRegex(ContainerError, "expert 3 of layer 1: bad magic"):
            c.expert(1, 3)
        with self.assertRaisesRegex(ContainerError, "expert 5 of layer 2"):
            c.expert(2, 5)

    def test_crc(self):
        R = 98304 // 8
        self.patch("experts-L3.bin", 2 * R + 100, b"\x55")
        Container(self.dir).expert(3, 2)  # not verified by default
        with self.assertRaisesRegex(ContainerError, "expert 2 of layer 3: checksum mismatch"):
            Container(self.dir, verify_crc=True).expert(3, 2)

    def test_trunk_out_of_file(self):
        self.edit_manifest(lambda m: m["trunk"][5].update(off=10 ** 7))
        with self.assertRaisesRegex(ContainerError, "outside trunk.bin"):
            Container(self.dir)


class Cli(unittest.TestCase):
    def run_cli(self, *args):
        env = dict(os.environ, PYTHONPATH=_paths.PYTHON_DIR)
        r = subprocess.run([sys.executable, "-m", "waste_ref.cli", *args], env=env,
                           capture_output=True, text=True, check=True)
        return r.stdout

    def test_logits_greedy_hidden(self):
        with open(os.path.join(_paths.FIXTURES, "tiny.eval.json")) as f:
            case = json.load(f)[1]
        ids = " ".join(str(i) for i in case["prompt"])
        with tempfile.TemporaryDirectory() as tmp:
            whid = os.path.join(tmp, "h.whid")
            out = json.loads(self.run_cli("logits", fixture(), "--ids", ids, "--json", "--dump-hidden", whid))
            self.assertLessEqual(np.abs(np.array(out["logits"]) - np.array(case["logits"])).max(), 2e-3)
            h = hidden_dump.read(whid)
            self.assertEqual(h.shape, (5, len(case["prompt"]), 128))
            with open(whid, "rb") as f:
                self.assertEqual(f.read(4), b"WHID")
            greedy = self.run_cli("greedy", fixture(), "--ids", ids, "-n", "3").split()
            self.assertEqual([int(t) for t in greedy], case["greedy"][:3])
            whid32 = os.path.join(tmp, "h32.whid")
            self.run_cli("logits", fixture(), "--ids", ids, "--f32", "--dump-hidden", whid32)
            self.assertIn("layer 3", self.run_cli("compare-hidden", whid, whid32))


if __name__ == "__main__":
    unittest.main()
