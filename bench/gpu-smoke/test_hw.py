"""hw.restore's glue, with stand-ins for torch, Lightning and train.py (no
PyPI, no GPU here): which loads it tries, and that the resume is train.py's
own config with one more epoch, handed to trainer.fit as ckpt_path."""

import os
import sys
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hw  # noqa: E402


class UnpicklingError(Exception):
    pass


def fakes(fit_error=None):
    seen = {}
    torch = types.ModuleType("torch")
    torch.__version__ = "2.6.0+cu124"
    torch.set_float32_matmul_precision = lambda p: None

    def load(path, map_location=None, weights_only=None):
        seen.setdefault("loads", []).append((path, weights_only))
        if weights_only is not False:  # torch 2.6's default
            raise UnpicklingError("Weights only load failed. Unsupported global\nmore")
        return {"epoch": 0, "loops": {}, "state_dict": {}}
    torch.load = load

    class Callback:
        pass

    class Trainer:
        def __init__(self, **kw):
            seen["trainer"] = kw
            self.callbacks = kw["callbacks"]

        def fit(self, model, train_dataloaders=None, val_dataloaders=None, ckpt_path=None):
            seen["fit"] = (model, train_dataloaders, val_dataloaders, ckpt_path)
            if fit_error:
                raise fit_error
            for epoch in (1,):
                self.current_epoch = epoch
                for cb in self.callbacks:
                    if hasattr(cb, "on_train_epoch_start"):
                        cb.on_train_epoch_start(self, model)

    lightning = types.ModuleType("lightning")
    lightning.__version__ = "2.5.1"
    lightning.Trainer = Trainer
    lp = types.ModuleType("lightning.pytorch")
    lpc = types.ModuleType("lightning.pytorch.callbacks")
    lpc.Callback = Callback

    train = types.ModuleType("train")
    train.parse_args = lambda argv: argv
    train.make_config = lambda argv: {"total_epochs": int(argv[argv.index("--epochs") + 1]),
                                      "initial_epochs": min(5, int(argv[argv.index("--epochs") + 1]) - 1),
                                      "argv": argv}
    train.make_loaders = lambda cfg: ("train", "val", "test")
    train.make_module = lambda cfg: "model"

    def common_callbacks(cfg):
        seen["cfg"] = cfg
        return []
    train.common_callbacks = common_callbacks
    train.trainer_limits = lambda cfg: {"limit_train_batches": 4}
    mods = {"torch": torch, "lightning": lightning, "lightning.pytorch": lp, "lightning.pytorch.callbacks": lpc,
            "train": train}
    return mods, seen


class RestoreGlueTest(unittest.TestCase):
    def run_restore(self, **kw):
        mods, seen = fakes(**kw)
        with mock.patch.dict(sys.modules, mods), mock.patch.object(sys, "path", list(sys.path)), \
                mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
            os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
            r = hw.restore("/w/run/checkpoints/food11.ckpt", "/repo/workspace", "/w/Food-11", 1)
        return r, seen

    def test_default_load_fails_and_the_resume_is_train_py_s_with_one_more_epoch(self):
        r, seen = self.run_restore()
        self.assertEqual(seen["loads"], [("/w/run/checkpoints/food11.ckpt", None),
                                         ("/w/run/checkpoints/food11.ckpt", False)])
        self.assertEqual(r["default"], "UnpicklingError: Weights only load failed. Unsupported global")
        self.assertIsNone(r["unsafe"])
        self.assertEqual(r["saved_epoch"], 0)
        self.assertEqual(seen["fit"], ("model", "train", "val", "/w/run/checkpoints/food11.ckpt"))
        self.assertEqual(seen["trainer"]["max_epochs"], 2)
        self.assertEqual(seen["trainer"]["limit_train_batches"], 4)
        self.assertFalse(seen["trainer"]["enable_checkpointing"])
        # The run that wrote the checkpoint unfroze the backbone at epoch 0
        # (--epochs 1); the resume must keep that, as Ray's restart would.
        self.assertEqual(seen["cfg"]["initial_epochs"], 0)
        self.assertIn("--no-pretrained", seen["cfg"]["argv"])
        self.assertIn("/w/Food-11", seen["cfg"]["argv"])
        self.assertIsNone(r["resume"])
        self.assertEqual(r["resume_epoch"], 1)
        line, ok = hw.restore_verdict(r)
        self.assertTrue(ok)
        self.assertIn("torch.load default FAILS (UnpicklingError)", line)

    def test_a_failing_fit_is_the_verdict_s_failure(self):
        r, _ = self.run_restore(fit_error=UnpicklingError("Weights only load failed."))
        self.assertEqual(r["resume"], "UnpicklingError: Weights only load failed.")
        self.assertIsNone(r["resume_epoch"])
        self.assertFalse(hw.restore_verdict(r)[1])


if __name__ == "__main__":
    unittest.main()
