"""Build the bundled example: an Elman RNN encoder and an early-stopping decoder, as text IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tensorloop as tl

HERE = Path(__file__).parent
STEPS, FEATURES, HIDDEN, MAX_DECODE = 6, 4, 8, 10


def build() -> tl.Model:
    rng = np.random.default_rng(7)
    W = tl.constant((rng.standard_normal((FEATURES, HIDDEN)) * 0.5).astype(np.float32), name="W")
    U = tl.constant((rng.standard_normal((HIDDEN, HIDDEN)) * 0.3).astype(np.float32), name="U")
    V = tl.constant((rng.standard_normal((HIDDEN, HIDDEN)) * 0.4).astype(np.float32), name="V")
    xs = tl.placeholder("float32", (STEPS, FEATURES), name="xs")
    h0 = tl.placeholder("float32", (HIDDEN,), name="h0")
    threshold = tl.placeholder("float32", (), name="threshold")

    def encode(h: tl.Tensor, x: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        h = tl.tanh(x @ W + h @ U)
        return h, h

    h, states = tl.scan(encode, h0, xs)

    # Decode until the step's norm falls under the threshold, or MAX_DECODE steps.
    def keep_going(carry: tuple[tl.Tensor, tl.Tensor, tl.Tensor]) -> tl.Tensor:
        step, _, norm = carry
        return tl.logical_and(step < MAX_DECODE, norm > threshold)

    def decode(carry: tuple[tl.Tensor, tl.Tensor, tl.Tensor]) -> tuple[tl.Tensor, ...]:
        step, y, _ = carry
        y = tl.tanh(y @ V) * 0.8
        step_norm = tl.sqrt(tl.reduce_sum(y * y))
        return step + 1, y, tl.name(step_norm, "step_norm")

    init = (tl.constant(np.int64(0)), h, tl.sqrt(tl.reduce_sum(h * h)))
    steps, y, norm = tl.while_loop(keep_going, decode, init)
    return tl.Model(
        {"encoded": h, "states": states, "decoded": y, "decode_steps": steps, "final_norm": norm},
        inputs=[xs, h0, threshold],
        name="rnn",
    )


def main() -> None:
    model = build()
    tl.save(model, HERE / "rnn.tl")
    rng = np.random.default_rng(0)
    np.savez(
        HERE / "rnn_inputs.npz",
        xs=rng.standard_normal((STEPS, FEATURES)).astype(np.float32),
        h0=np.zeros(HIDDEN, np.float32),
        threshold=np.float32(0.2),
    )


if __name__ == "__main__":
    main()
