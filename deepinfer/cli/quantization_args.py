"""`--quantization`, shared by the commands that load a model (deepinfer/model/quant/choice.py says
what each choice loads; listed here so that building the parser imports no model code)."""

from __future__ import annotations

import argparse

CHOICES = ("auto", "gguf", "int8", "int4", "none")


def add_quantization_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quantization", choices=CHOICES, default="auto",
                        help="weights: auto (a GGUF's quantized blocks where the model has a GGUF, as the "
                             "default model does; else float), gguf, int8 / int4 (quantize float weights "
                             "on load), none (float weights; default auto)")
