"""Standard-library tests of train.py's plain logic and its modules (no Ray,
Lightning or torch needed): run with `python3 -m unittest discover -s
workspace` (the Makefile's py-check). Importing them here also proves they
load without their heavy dependencies, which the Ray driver and workers
rely on."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_events  # noqa: E402
import ray_modes  # noqa: E402
import train  # noqa: E402


def events(out):
    """The JSON of every MLTRAIN_EVENT line in out."""
    recs = []
    for line in out.splitlines():
        marker, _, body = line.partition(" ")
        if marker == lab_events.EVENT:
            recs.append(json.loads(body))
    return recs


class ArgsTest(unittest.TestCase):
    def test_keep_checkpoints_defaults_per_mode(self):
        self.assertEqual(train.parse_args(["--mode", "ray"]).keep_checkpoints, 2)
        self.assertEqual(train.parse_args(["--mode", "tune"]).keep_checkpoints, 1)
        self.assertEqual(train.parse_args(["--mode", "ray", "--keep-checkpoints", "0"]).keep_checkpoints, 0)
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            train.parse_args(["--mode", "ray", "--keep-checkpoints", "-1"])

    def test_pretrained_follows_flags_and_env(self):
        self.assertTrue(train.make_config(train.parse_args([]))["pretrained"])
        self.assertFalse(train.make_config(train.parse_args(["--no-pretrained"]))["pretrained"])
        self.assertFalse(train.make_config(train.parse_args(["--fake-data"]))["pretrained"])
        with mock.patch.dict(os.environ, {"MLTRAIN_NO_PRETRAINED": "1"}):
            cfg = train.make_config(train.parse_args([]))
        self.assertFalse(cfg["pretrained"])
        self.assertFalse(cfg["fake_data"], "no pretrained weights is not fake data")
        with mock.patch.dict(os.environ, {"MLTRAIN_NO_PRETRAINED": "0"}):
            self.assertTrue(train.make_config(train.parse_args([]))["pretrained"])


class CheckpointNameTest(unittest.TestCase):
    def test_names_round_trip_and_sort_by_epoch(self):
        names = [lab_events.checkpoint_dir_name(e) for e in (0, 3, 10, 123)]
        self.assertEqual(names[1], "checkpoint_epoch_000003")
        self.assertEqual(names, sorted(names), "lexical order is epoch order (the Go side compares names)")
        for e, n in zip((0, 3, 10, 123), names):
            self.assertEqual(lab_events.epoch_from_name(n), e)
            self.assertEqual(lab_events.epoch_from_name("ray/run/" + n + "/"), e)

    def test_other_names_have_no_epoch(self):
        for n in ("checkpoint_2026-11-21_20-00-01.000001", "checkpoint_000003", "checkpoint_epoch_", None, ""):
            self.assertIsNone(lab_events.epoch_from_name(n), n)

    def test_checkpoint_epoch_prefers_the_record_beside_it(self):
        with tempfile.TemporaryDirectory() as d:
            lab_events.write_meta(d, epoch=7, run="r")
            self.assertEqual(lab_events.checkpoint_epoch(d, "ray/r/checkpoint_epoch_000002", "checkpoint.ckpt"), 7)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, lab_events.META_FILE), "w") as f:
                f.write("{not json")
            self.assertEqual(lab_events.checkpoint_epoch(d, "ray/r/checkpoint_epoch_000002", "checkpoint.ckpt"), 2)
        with tempfile.TemporaryDirectory() as d:
            # No record, no epoch in the name, and no readable Lightning file.
            self.assertIsNone(lab_events.checkpoint_epoch(d, "ray/r/checkpoint_2026", "checkpoint.ckpt"))


class ResolveReportedTest(unittest.TestCase):
    name = "checkpoint_epoch_000004"
    path = "ray/RUN/checkpoint_epoch_000004"

    def test_registered_when_the_controller_lists_it(self):
        got = lab_events.resolve_reported(self.name, ["ray/RUN/checkpoint_epoch_000003", self.path], self.path)
        self.assertEqual(got, (self.path, True))

    def test_not_registered_when_the_controller_does_not_list_it(self):
        got = lab_events.resolve_reported(self.name, ["ray/RUN/checkpoint_epoch_000003"], self.path)
        self.assertEqual(got, (self.path, False))

    def test_without_the_api_it_is_never_called_registered(self):
        self.assertEqual(lab_events.resolve_reported(self.name, None, self.path), (self.path, False))
        self.assertEqual(lab_events.resolve_reported(self.name, None, "ray/RUN/checkpoint_epoch_000003"), (None, False))

    def test_a_name_prefix_is_not_a_match(self):
        other = "ray/RUN/checkpoint_epoch_0000045"
        self.assertEqual(lab_events.resolve_reported(self.name, [other], None), (None, False))

    def test_ray_chosen_names(self):
        p = "ray/RUN/checkpoint_2026-11-21_20-00-01.000001"
        self.assertEqual(lab_events.resolve_reported(None, [p], p), (p, True))
        self.assertEqual(lab_events.resolve_reported(None, [], p), (p, False))
        self.assertEqual(lab_events.resolve_reported(None, None, None), (None, False))


class AcceptsKwargTest(unittest.TestCase):
    def test_signatures(self):
        def new_report(metrics, checkpoint=None, checkpoint_dir_name=None):
            pass

        def old_report(metrics, *, checkpoint=None):
            pass

        def any_kwargs(metrics, **kw):
            pass

        self.assertTrue(lab_events.accepts_kwarg(new_report, "checkpoint_dir_name"))
        self.assertFalse(lab_events.accepts_kwarg(old_report, "checkpoint_dir_name"))
        self.assertTrue(lab_events.accepts_kwarg(any_kwargs, "checkpoint_dir_name"))
        self.assertFalse(lab_events.accepts_kwarg(object(), "checkpoint_dir_name"), "unknowable means no")


class TrialEndTest(unittest.TestCase):
    def test_rule(self):
        cases = [
            # error, iterations, max_t, done of the last logged result -> end
            ((ValueError("boom"), 20, 20, True), "error"),
            ((None, 20, 20, True), "max_t"),     # ASHA stops at max_t too: still a full run
            ((None, 20, 20, False), "max_t"),
            ((None, 3, 20, True), "scheduler"),  # Tune marked the result it stopped on
            ((None, 3, 20, False), "script"),    # the trainable returned; only the duplicate got done
            ((None, 0, 20, None), "script"),     # returned before reporting anything
            ((None, 3, 20, None), "scheduler"),  # no record reached us (end_from says "inferred")
        ]
        for args, want in cases:
            self.assertEqual(lab_events.trial_end(*args), want, args)

    def test_counts(self):
        ends = ["max_t", "scheduler", "scheduler", "script", "error", "scheduler"]
        c = lab_events.tune_counts([{"end": e} for e in ends])
        self.assertEqual(c, {"completed": 1, "stopped_by_scheduler": 3, "ended_by_script": 1, "errored": 1,
                             "stopped_early": 3})
        self.assertEqual(sum(c[k] for k in ("completed", "stopped_by_scheduler", "ended_by_script", "errored")),
                         len(ends))

    def test_recorder_keeps_the_last_flag_per_trial(self):
        # What the Tune callback stores and run_tune reads back.
        ray_modes._LAST_DONE.clear()
        self.addCleanup(ray_modes._LAST_DONE.clear)
        for trial, done in (("t1", False), ("t2", False), ("t1", True), ("t2", False)):
            ray_modes.record_done(trial, {"done": done, "training_iteration": 1})
        ray_modes.record_done("t3", {"training_iteration": 1})  # no flag: not done
        self.assertEqual(ray_modes._LAST_DONE, {"t1": True, "t2": False, "t3": False})


class EventTest(unittest.TestCase):
    def test_event_lines_are_marker_then_json(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            lab_events.emit("checkpoint", mode="ray", run="RUN", rank=0, epoch=3,
                       checkpoint="ray/RUN/checkpoint_epoch_000003", name="checkpoint_epoch_000003",
                       node_ip="10.0.0.3", registered=True)
            lab_events.emit("resume", mode="ray", rank=0, checkpoint="ray/RUN/checkpoint_epoch_000003",
                       name="checkpoint_epoch_000003", epoch=3, node_ip="10.0.0.4", node_id="n", run="RUN")
        recs = events(out.getvalue())
        self.assertEqual([r["event"] for r in recs], ["checkpoint", "resume"])
        for r in recs:
            self.assertIsInstance(r["time"], float)
            self.assertEqual(r["epoch"], 3)
            self.assertEqual(lab_events.basename(r["checkpoint"]), r["name"])
            self.assertEqual(lab_events.epoch_from_name(r["name"]), r["epoch"])
        self.assertTrue(recs[0]["registered"])


if __name__ == "__main__":
    unittest.main()


class DefaultRunNameTest(unittest.TestCase):
    def test_a_ray_job_names_its_run_after_its_submission_id(self):
        env = {"RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps({"runtime_env": {}, "metadata": {"job_submission_id": "raysubmit_abc"}})}
        self.assertEqual(train.default_run_name("ray", env), "food11-ray-raysubmit_abc")

    def test_outside_a_job_two_names_never_collide(self):
        names = {train.default_run_name("ray", {}) for _ in range(50)}
        self.assertEqual(len(names), 50)
        for env in ({"RAY_JOB_CONFIG_JSON_ENV_VAR": "not json"}, {"RAY_JOB_CONFIG_JSON_ENV_VAR": "[]"}):
            self.assertTrue(train.default_run_name("tune", env).startswith("food11-tune-"))
