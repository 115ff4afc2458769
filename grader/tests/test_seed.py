"""The hidden seed: derived from an instructor secret and the submission, recorded in
the report without the secret, reproducible with --seed."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from pathlib import Path

from grader import seed
from grader.tests.test_cli import CliTestCase

SECRET = "course-secret-8f3a1c"


class DeriveTest(unittest.TestCase):
    def test_deterministic_and_in_range(self):
        first = seed.derive(b"k", "sha256:abc")
        self.assertEqual(first, seed.derive(b"k", "sha256:abc"))
        self.assertTrue(1 <= first < 2**31)
        self.assertNotEqual(first, seed.derive(b"k", "sha256:abd"))  # another submission
        self.assertNotEqual(first, seed.derive(b"other", "sha256:abc"))  # another secret

    def test_identity_follows_content(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = Path(tmp) / "a.cu"
            a.write_text("x")
            one = seed.identity([("labs/a/a.cu", a)])
            self.assertEqual(one, seed.identity([("labs/a/a.cu", a), ("labs/b/b.cu", Path(tmp) / "missing")]))
            a.write_text("y")
            self.assertNotEqual(one, seed.identity([("labs/a/a.cu", a)]))
            self.assertTrue(one.startswith("sha256:"))

    def test_precedence(self):
        ident = lambda: "sha256:1"  # noqa: E731
        with tempfile.TemporaryDirectory() as tmp:
            secret_file = Path(tmp) / "secret"
            secret_file.write_text(SECRET + "\n")
            env = dict(os.environ)
            try:
                os.environ.pop(seed.SECRET_ENV, None)
                self.assertEqual(seed.choose(cli_seed=7, secret_file=secret_file, config_seed=3, identity_of=ident).how,
                                 "command line")
                chosen = seed.choose(cli_seed=None, secret_file=secret_file, config_seed=3, identity_of=ident)
                self.assertEqual((chosen.seed, chosen.how, chosen.identity),
                                 (seed.derive(SECRET.encode(), "sha256:1"), "secret file", "sha256:1"))
                self.assertEqual(seed.choose(cli_seed=None, secret_file=None, config_seed=3, identity_of=ident).seed, 3)
                os.environ[seed.SECRET_ENV] = SECRET
                chosen = seed.choose(cli_seed=None, secret_file=None, config_seed=3, identity_of=ident)
                self.assertEqual(chosen.seed, seed.derive(SECRET.encode(), "sha256:1"))
                del os.environ[seed.SECRET_ENV]
                self.assertEqual(seed.choose(cli_seed=None, secret_file=None, config_seed="random",
                                             identity_of=ident).how, "random")
            finally:
                os.environ.clear()
                os.environ.update(env)

    def test_empty_secret_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            empty = Path(tmp) / "empty"
            empty.write_text("\n")
            with self.assertRaises(seed.SecretError):
                seed.read_secret(empty)
            with self.assertRaises(seed.SecretError):
                seed.read_secret(Path(tmp) / "none")


class CliSecretTest(CliTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake_labs(self.bin)
        for lab in ("vectorAdd", "reduction", "scan"):
            (self.root / "labs" / lab / f"{lab}.cu").write_text(f"// {lab}\n")
        self.secret_file = self.tmp / "secret"
        self.secret_file.write_text(SECRET)
        self.sub = self.tmp / "student"
        shutil.copytree(self.root, self.sub)

    def grade(self, *extra: str) -> tuple[dict, str]:
        code, out, err = self.main("--no-build", "--skip-bench", "vectorAdd", "--submission", str(self.sub), *extra)
        self.assertIn(code, (0, 1), out + err)
        return self.report(), out

    # Same submission, same seed; another submission, another seed; the secret nowhere.
    def test_secret_derived_seed(self):
        first, out = self.grade("--secret-file", str(self.secret_file))
        self.assertEqual(first["seed_source"]["how"], "secret file")
        self.assertTrue(first["seed_source"]["identity"].startswith("sha256:"))
        again, _ = self.grade("--secret-file", str(self.secret_file))
        self.assertEqual(first["seed"], again["seed"])
        report_text = (self.build / "report.json").read_text()
        self.assertNotIn(SECRET, report_text)
        self.assertNotIn(SECRET, out)
        (self.sub / "labs/vectorAdd/vectorAdd.cu").write_text("// changed\n")
        other, _ = self.grade("--secret-file", str(self.secret_file))
        self.assertNotEqual(first["seed"], other["seed"])
        # The tests ran with the derived seed, and --seed reproduces it.
        self.assertIn(f"--seed={other['seed']}", other["labs"][0]["reproduce"]["test"])
        replay, out = self.grade("--seed", str(other["seed"]))
        self.assertEqual((replay["seed"], replay["seed_source"]["how"]), (other["seed"], "command line"))
        self.assertIn(f"seed {other['seed']} (command line)", out)

    def test_secret_from_environment(self):
        os.environ[seed.SECRET_ENV] = SECRET
        report, out = self.grade()
        self.assertEqual(report["seed_source"]["how"], f"secret from ${seed.SECRET_ENV}")
        self.assertNotIn(SECRET, (self.build / "report.json").read_text() + out)

    def test_unusable_secret_file(self):
        code, _, err = self.main("--secret-file", str(self.tmp / "none"))
        self.assertEqual(code, 2)
        self.assertIn("cannot read the secret file", err)


if __name__ == "__main__":
    unittest.main()
