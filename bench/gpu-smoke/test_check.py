"""Tests of the GPU smoke run's checks (standard library only; make py-check)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

U0 = "GPU-4f6c1a2b-0d1e-4c3b-9a8f-0123456789ab"
U1 = "GPU-5a7d2b3c-1e2f-4d4c-8b9a-abcdef012345"
NVML = [
    {"vendor": "nvidia", "index": 0, "uuid": U0, "name": "NVIDIA A100-PCIE-40GB", "source": "nvml"},
    {"vendor": "nvidia", "index": 1, "uuid": U1, "name": "NVIDIA A100-PCIE-40GB", "source": "nvml"},
]


def ev(kind, **fields):
    rec = {"event": kind, "time": 1.5}
    rec.update(fields)
    return check.EVENT + " " + json.dumps(rec)


def good_log(gpu=None, result=None):
    gpu = gpu if gpu is not None else {"accelerator": "gpu", "name": "NVIDIA A100-PCIE-40GB",
                                       "uuid": U1[4:], "visible_devices": U1}
    res = {"mode": "plain", "run": "gpu-smoke", "epochs": 1, "gpu": gpu}
    res.update(result or {})
    return "\n".join([
        ev("start", mode="plain", run="gpu-smoke"),
        "GPU available: True (cuda), used: True",  # Lightning's own output in between
        ev("worker", mode="plain", rank=0, world_size=1, gpu=gpu),
        ev("epoch", epoch=0, run="gpu-smoke", metrics={"val_loss": 2.3}),
        check.RESULT + " " + json.dumps(res),
    ])


class GpusTest(unittest.TestCase):
    def test_good_report(self):
        self.assertEqual(check.check_gpus({"gpus": NVML, "problems": []}, 2), [])

    def test_count_must_match_nvidia_smi(self):
        probs = check.check_gpus({"gpus": NVML[:1], "problems": []}, 2)
        self.assertEqual(len(probs), 1)
        self.assertIn("reports 1 NVIDIA GPU(s), nvidia-smi lists 2", probs[0])
        none = check.check_gpus({"gpus": [], "problems": [{"code": "nvml-error", "message": "boom"}]}, 1)
        self.assertIn("nvml-error: boom", none[0], "NVML's own problem rows are shown")

    def test_every_gpu_needs_an_nvml_uuid(self):
        bad = [dict(NVML[0], uuid="4f6c1a2b"), dict(NVML[1], source="kfd")]
        probs = check.check_gpus({"gpus": bad, "problems": []}, 2)
        self.assertEqual(len(probs), 2, probs)

    def test_pick_skips_mig(self):
        self.assertEqual(check.pick_gpu({"gpus": [dict(NVML[0], mig=True), NVML[1]]})["uuid"], U1)
        self.assertEqual(check.pick_gpu({"gpus": NVML})["uuid"], U0)


class LogTest(unittest.TestCase):
    def test_good_log(self):
        self.assertEqual(check.check_log(good_log(), NVML, U1), [])

    def test_missing_events_and_result(self):
        probs = check.check_log(ev("start", mode="plain"), NVML, U1)
        self.assertEqual(len(probs), 3, probs)  # no worker, no epoch, no result

    def test_cpu_or_gpuless_run_fails(self):
        cpu = {"accelerator": "cpu", "visible_devices": U1}
        probs = check.check_log(good_log(gpu=cpu), NVML, U1)
        self.assertTrue(any("computed on 'cpu'" in p for p in probs), probs)
        self.assertTrue(any("names no GPU" in p for p in probs), probs)

    def test_wrong_gpu_fails(self):
        other = {"accelerator": "gpu", "name": "NVIDIA A100-PCIE-40GB", "uuid": U0[4:]}
        probs = check.check_log(good_log(gpu=other), NVML, U1)
        self.assertTrue(any("not the one made visible" in p for p in probs), probs)
        renamed = {"accelerator": "gpu", "name": "Tesla T4"}
        probs = check.check_log(good_log(gpu=renamed), NVML, U1)
        self.assertTrue(any("'Tesla T4'" in p for p in probs), probs)

    def test_result_fields(self):
        for change, want in (({"mode": "ray"}, "not plain"), ({"epochs": 0}, "want at least 1"),
                             ({"epochs": None}, "want at least 1")):
            probs = check.check_log(good_log(result=change), NVML, U1)
            self.assertTrue(any(want in p for p in probs), (change, probs))

    def test_reads_what_train_py_prints(self):
        # The lines come from train.py's own emit/result (lab_events), so
        # a change of format there fails here.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "workspace"))
        import contextlib
        import io
        import lab_events as train
        gpu = {"accelerator": "gpu", "name": "NVIDIA A100-PCIE-40GB", "uuid": U1[4:]}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            train.emit("start", mode="plain", run="r")
            train.emit("worker", mode="plain", rank=0, world_size=1, gpu=gpu, run="r")
            train.emit("epoch", epoch=0, run="r", metrics={})
            train.result({"mode": "plain", "run": "r", "epochs": 1, "gpu": gpu})
        self.assertEqual(check.check_log(out.getvalue(), NVML, U1), [])

    def test_ray_prefixes_and_colour_do_not_hide_lines(self):
        text = "\n".join("\x1b[36m(pid=7)\x1b[0m " + line for line in good_log().splitlines())
        events, res = check.parse_log(text)
        self.assertEqual([e["event"] for e in events], ["start", "worker", "epoch"])
        self.assertEqual(res["mode"], "plain")


class UnpicklingError(Exception):
    """Stands in for pickle's, whose class name the verdict quotes."""


def report(**kw):
    r = {"torch": "2.6.0+cu124", "lightning": "2.5.1", "default": None, "unsafe": None, "resume": None,
         "resume_epoch": 1, "saved_epoch": 0}
    r.update(kw)
    return r


class RestoreTest(unittest.TestCase):
    def test_err_of_names_the_class_and_the_first_line(self):
        e = UnpicklingError("Weights only load failed. This file can still be loaded...\nmore text")
        self.assertEqual(check.hw.err_of(e), "UnpicklingError: Weights only load failed. This file can still be loaded...")
        self.assertEqual(check.hw.err_of(KeyError()), "KeyError")
        self.assertLessEqual(len(check.hw.err_of(ValueError("x" * 500))), 160 + len("ValueError: "))

    def test_default_weights_only_follows_torch_2_6_and_the_env(self):
        wo = check.hw.default_weights_only
        self.assertIs(wo("2.6.0+cu124", {}), True)
        self.assertIs(wo("2.10.1", {}), True)
        self.assertIs(wo("2.5.1", {}), False)
        self.assertIs(wo("1.13.0", {}), False)
        self.assertIsNone(wo("dev", {}))
        self.assertIs(wo("2.6.0", {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}), False)
        self.assertIs(wo("2.5.0", {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "true"}), True)

    def test_default_load_failing_is_reported_but_a_working_resume_passes(self):
        line, ok = check.hw.restore_verdict(report(default="UnpicklingError: Weights only load failed."))
        self.assertTrue(ok)
        self.assertTrue(line.startswith("gpu-smoke: weights_only: torch 2.6.0+cu124 (default weights_only=True), "
                                        "lightning 2.5.1"), line)
        self.assertIn("torch.load default FAILS (UnpicklingError)", line)
        self.assertIn("weights_only=False OK", line)
        self.assertIn("as train.py's Ray mode) OK, trained on from epoch 1 (checkpoint holds epoch 0)", line)

    def test_a_failed_resume_fails_the_verdict(self):
        line, ok = check.hw.restore_verdict(report(default="UnpicklingError: x", resume="UnpicklingError: x",
                                                   resume_epoch=None))
        self.assertFalse(ok)
        self.assertIn("as train.py's Ray mode) FAILS (UnpicklingError)", line)
        self.assertNotIn("trained on", line)

    def test_everything_loading_under_an_older_torch(self):
        line, ok = check.hw.restore_verdict(report(torch="2.5.1"))
        self.assertTrue(ok)
        self.assertIn("(default weights_only=False)", line)
        self.assertIn("torch.load default OK", line)

    def test_resume_notes_a_repeated_epoch(self):
        self.assertEqual(check.hw.resume_notes(report()), [])
        notes = check.hw.resume_notes(report(resume_epoch=0))
        self.assertEqual(len(notes), 1)
        self.assertIn("trained epoch 0 again", notes[0])
        self.assertEqual(check.hw.resume_notes(report(resume="RuntimeError: x", resume_epoch=0)), [])

    def test_result_checkpoint(self):
        self.assertEqual(check.result_checkpoint(good_log(result={"checkpoint": "/w/run/checkpoints/food11.ckpt"})),
                         "/w/run/checkpoints/food11.ckpt")
        self.assertEqual(check.result_checkpoint(good_log()), "")
        self.assertEqual(check.result_checkpoint("no result here"), "")


class DevicesTest(unittest.TestCase):
    def seen(self, **kw):
        d = {"torch": "2.6.0", "visible": U1, "count": 1, "name": "NVIDIA H200", "uuid": U1[4:]}
        d.update(kw)
        return d

    def test_the_one_visible_gpu_is_device_0(self):
        d = self.seen()
        self.assertEqual(check.hw.device_problems(d, U1), [])
        self.assertEqual(check.hw.device_line(d, U1, "host process"),
                         "gpu-smoke: devices (host process; CUDA_VISIBLE_DEVICES=%s; chosen %s): "
                         "torch.cuda.device_count()=1; cuda:0 NVIDIA H200, uuid %s = the chosen GPU" % (U1, U1, U1))

    def test_another_gpu_or_more_than_one_is_a_problem(self):
        d = self.seen(uuid=U0[4:], count=2, visible=None)
        problems = check.hw.device_problems(d, U1)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("torch sees 2 CUDA device(s)", problems[0])
        self.assertIn("not the GPU made visible (%s)" % U1, problems[1])
        line = check.hw.device_line(d, U1, "container img")
        self.assertIn("CUDA_VISIBLE_DEVICES=unset", line)
        self.assertIn("NOT the chosen GPU", line)

    def test_no_uuid_property_is_said_not_failed(self):
        d = self.seen(uuid=None)
        self.assertEqual(check.hw.device_problems(d, U1), [])
        self.assertIn("no uuid property in torch 2.6.0", check.hw.device_line(d, U1, "host process"))

    def test_no_usable_gpu(self):
        d = self.seen(error="torch.cuda.device_count() is 0 (torch.version.cuda=None)")
        self.assertEqual(len(check.hw.device_problems(d, U1)), 1)
        self.assertIn("torch sees no usable GPU", check.hw.device_line(d, U1, "host process"))


if __name__ == "__main__":
    unittest.main()
