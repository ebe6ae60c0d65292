"""The reference model's Container interface over an unquantised Hugging Face checkpoint.

KimiModel(HfWeights(ckpt_dir)) runs the PyTorch reference on the weights a
checkpoint directory holds (hf_synth.load_weights decodes them), without a
`waste convert` in between: what the converted container and other engines
(llama.cpp through gguf_kimi.py) are compared with.
"""
import numpy as np

from . import hf_synth
from .container import Container


class HfWeights(Container):
    """Tensors by logical name (prefix stripped); routed experts as (w1, w3, w2) = (gate, up, down)."""

    def __init__(self, ckpt_dir):  # noqa: super().__init__ reads a container; this reads a checkpoint
        full, text = hf_synth.load_config(ckpt_dir)
        self.config = dict(text)
        weights = hf_synth.load_weights(ckpt_dir)
        self.prefix = "language_model." if any(k.startswith("language_model.") for k in weights) else ""
        self.tensors = {}
        self._hf_experts = {}
        for name, w in weights.items():
            if not name.startswith(self.prefix):
                continue
            short = name[len(self.prefix):]
            parts = short.split(".")
            if ".experts." in short and parts[-2] in ("w1", "w2", "w3"):
                layer, e = int(parts[2]), int(parts[5])
                self._hf_experts.setdefault((layer, e), {})[parts[-2]] = w
            else:
                self.tensors[short] = w.astype(np.float32) if w.dtype != np.float64 else w
        self._experts = {}

    def expert(self, layer, e):
        m = self._hf_experts[(layer, e)]
        return m["w1"], m["w3"], m["w2"]
