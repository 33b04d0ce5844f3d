"""GradBench's ``lstm``: ADBench's LSTM, whose weight matrices are diagonal, and its gradient.

l layers of b cells each run over a sequence of c characters, each character its b bits.
Per step t and layer i, with x the layer's input (for layer 0 the bits sₜ times the input
weights w_in, for the others the hidden state just computed below) and (h, c) the layer's
state:

    f = σ(x W_f + B_f),  ι = σ(h W_ι + B_ι),  o = σ(x W_o + B_o),  g = tanh(h W_g + B_g)
    c ← c f + ι g,       h ← o tanh(c)

(all products entrywise), the prediction y = h_top w_out + b_out, and the loss is
−Σₜ Σⱼ sₜ₊₁,ⱼ (yⱼ − log(Σₖ exp yₖ + 2)) / ((c − 1) b) — ADBench's log-sum-exp has that
``+ 2``. Functions: ``objective`` (the loss) and ``jacobian`` (its gradient w.r.t.
``main_params`` (2l × 4b: per layer a row of weights W_f, W_ι, W_o, W_g and a row of
biases) then ``extra_params`` (3 × b: w_in, w_out, b_out), each flattened row by row, the
two concatenated). ``state`` (2l × b: per layer h then c) and ``sequence`` (c × b) are
data.

GradBench's inputs cannot be reproduced here: its eval draws the parameters and state with
numpy's unseeded global generator, and takes the characters from a text file
(``evals/lstm/data/lstm_full.txt``) that is not in our checkout. :func:`inputs` follows
its procedure (uniform [0, 1) parameters and state, characters as their bits, most
significant first, b = ⌈log₂ max code⌉) with ``np.random.RandomState(31337)`` and, for the
text, printable ASCII characters drawn from it (b = 7); sizes ``l=L,c=C`` as GradBench
names them, in its order of l·c.

By hand: the reverse sweep of the loop (:func:`jacobian_by_hand`). With κ = −1/((c−1)b)
and p = exp(y)/(Σ exp y + 2): ∂loss/∂y = κ (sₜ₊₁ − p Σⱼ sₜ₊₁,ⱼ); through a layer, with
h̄ and c̄ the adjoints of its new state, ō = h̄ tanh(c), c̄ += h̄ o (1 − tanh²c), then
f̄ = c̄ c_old, ῑ = c̄ g, ḡ = c̄ ι, c̄_old = c̄ f, each gate's pre-activation adjoint its
adjoint times σ' (= σ(1 − σ)) or tanh' (= 1 − g²), which gives the weights' adjoints
(times x or h_old), the biases', and x̄, h̄_old.

>>> import numpy as np
>>> bits("A", 7).tolist()
[[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from ..transforms.loops import scan
from .common import Eval, InputError, Prepared, Runner, floats, gradient_runner, primal_runner, \
    to_json

SEED = 31337
L = (2, 4, 6)
C = (1024, 4096, 8192)
WORKLOADS = sorted([(l, c) for l in L for c in C], key=lambda v: v[0] * v[1])
SIZES = tuple(f"l={l},c={c}" for l, c in WORKLOADS)


def _unpacked(main: Any, extra: Any) -> tuple:
    """Per layer its four weight and four bias rows (slices taken once), and w_in, w_out,
    b_out."""
    layers, b = main.shape[0] // 2, extra.shape[1]
    weights = [[main[2 * i, j * b:(j + 1) * b] for j in range(4)] for i in range(layers)]
    biases = [[main[2 * i + 1, j * b:(j + 1) * b] for j in range(4)] for i in range(layers)]
    return weights, biases, extra[0], extra[1], extra[2]


def _step(p: tuple, hidden: list, cell: list, now: Any, after: Any) -> Any:
    """One character through every layer (``hidden`` and ``cell`` updated in place): the
    step's term of the sum, ``Σⱼ sₜ₊₁,ⱼ (yⱼ − log(Σₖ exp yₖ + 2))``."""
    weights, biases, w_in, w_out, b_out = p
    x = now * w_in
    for i, ((wf, wi, wo, wc), (bf, bi, bo, bc)) in enumerate(zip(weights, biases)):
        forget = dnp.sigmoid(x * wf + bf)
        ingate = dnp.sigmoid(hidden[i] * wi + bi)
        outgate = dnp.sigmoid(x * wo + bo)
        change = dnp.tanh(hidden[i] * wc + bc)
        cell[i] = cell[i] * forget + ingate * change
        hidden[i] = outgate * dnp.tanh(cell[i])
        x = hidden[i]
    y = x * w_out + b_out
    return dnp.sum(after * (y - dnp.log(dnp.sum(dnp.exp(y)) + 2.0)))


def objective(main: Any, extra: Any, state: Any, sequence: Any) -> Any:
    """The loss, in :mod:`diffkit.numpy`: a Python loop over steps and layers (the
    weights' slices taken once, before it)."""
    layers, b, steps = main.shape[0] // 2, extra.shape[1], sequence.shape[0]
    p = _unpacked(main, extra)
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    total = 0.0
    for t in range(steps - 1):
        total = total + _step(p, hidden, cell, sequence[t], sequence[t + 1])
    return -total / ((steps - 1) * b)


def objective_scanned(main: Any, extra: Any, state: Any, sequence: Any) -> Any:
    """The same loss with its loop over the characters as ``dk.scan`` (the layers a Python
    loop in its body): one loop in a compiled graph, ``lax.scan`` on JAX's arrays."""
    layers, b, steps = main.shape[0] // 2, extra.shape[1], sequence.shape[0]
    p = _unpacked(main, extra)

    def step(carry: tuple, pair: tuple) -> tuple:
        hidden, cell, total = list(carry[0]), list(carry[1]), carry[2]
        total = total + _step(p, hidden, cell, *pair)
        return (hidden, cell, total), None

    init = ([state[2 * i] for i in range(layers)], [state[2 * i + 1] for i in range(layers)],
            0.0)
    (_, _, total), _ = scan(step, init, (sequence[:-1], sequence[1:]))
    return -total / ((steps - 1) * b)


def loss(params: tuple, state: Any, sequence: Any) -> Any:
    """The objective of ``params = (main_params, extra_params)``: what ``jacobian``
    differentiates, its loop over the characters a ``dk.scan`` (GradBench's sequences
    have 1,024 characters and more: unrolled, neither diffkit's compiler nor jax.jit
    builds that in minutes)."""
    return objective_scanned(params[0], params[1], state, sequence)


# --------------------------------------------------------------------------- by hand


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def _forward(main: np.ndarray, extra: np.ndarray, state: np.ndarray, sequence: np.ndarray
             ) -> tuple[float, list]:
    """The loss and, per step, what the reverse sweep needs."""
    layers, b, steps = main.shape[0] // 2, extra.shape[1], sequence.shape[0]
    h = [state[2 * i].copy() for i in range(layers)]
    c = [state[2 * i + 1].copy() for i in range(layers)]
    total, tape = 0.0, []
    for t in range(steps - 1):
        x = sequence[t] * extra[0]
        saved = []
        for i in range(layers):
            w, bias = main[2 * i].reshape(4, b), main[2 * i + 1].reshape(4, b)
            f = _sigmoid(x * w[0] + bias[0])
            ig = _sigmoid(h[i] * w[1] + bias[1])
            o = _sigmoid(x * w[2] + bias[2])
            g = np.tanh(h[i] * w[3] + bias[3])
            c_new = c[i] * f + ig * g
            tc = np.tanh(c_new)
            saved.append((x, h[i], c[i], f, ig, o, g, tc))
            c[i], h[i] = c_new, o * tc
            x = h[i]
        y = x * extra[1] + extra[2]
        e = np.exp(y)
        total += float(np.sum(sequence[t + 1] * (y - np.log(np.sum(e) + 2.0))))
        tape.append((saved, x, e / (np.sum(e) + 2.0)))
    return -total / ((steps - 1) * b), tape


def objective_by_hand(main: np.ndarray, extra: np.ndarray, state: np.ndarray,
                      sequence: np.ndarray) -> float:
    return _forward(main, extra, state, sequence)[0]


def jacobian_by_hand(main: np.ndarray, extra: np.ndarray, state: np.ndarray,
                     sequence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(∂loss/∂main_params, ∂loss/∂extra_params) by the loop's reverse sweep."""
    layers, b, steps = main.shape[0] // 2, extra.shape[1], sequence.shape[0]
    _, tape = _forward(main, extra, state, sequence)
    kappa = -1.0 / ((steps - 1) * b)
    d_main, d_extra = np.zeros((layers, 2, 4, b)), np.zeros_like(extra)
    w = main.reshape(layers, 2, 4, b)[:, 0]
    h_bar = [np.zeros(b) for _ in range(layers)]  # adjoints of each layer's state,
    c_bar = [np.zeros(b) for _ in range(layers)]  # carried back from the next step
    for t in reversed(range(steps - 1)):
        saved, top, p = tape[t]
        gold = sequence[t + 1]
        y_bar = kappa * (gold - p * np.sum(gold))
        d_extra[1] += y_bar * top
        d_extra[2] += y_bar
        x_bar = y_bar * extra[1]  # the adjoint of the top layer's new hidden state
        for i in reversed(range(layers)):
            x, h, c, f, ig, o, g, tc = saved[i]
            hb = h_bar[i] + x_bar
            cb = c_bar[i] + hb * o * (1.0 - tc * tc)
            pre = np.stack([cb * c * f * (1.0 - f),          # forget
                            cb * g * ig * (1.0 - ig),        # in
                            hb * tc * o * (1.0 - o),         # out
                            cb * ig * (1.0 - g * g)])        # change
            d_main[i, 0] += pre * np.stack([x, h, x, h])
            d_main[i, 1] += pre
            x_bar = pre[0] * w[i, 0] + pre[2] * w[i, 2]
            h_bar[i] = pre[1] * w[i, 1] + pre[3] * w[i, 3]
            c_bar[i] = cb * f
        d_extra[0] += x_bar * sequence[t]
    return d_main.reshape(2 * layers, 4 * b), d_extra


# --------------------------------------------------------------------------- GradBench


def bits(text: str, width: int) -> np.ndarray:
    """Each character's code in ``width`` bits, most significant first."""
    return np.array([[float(d) for d in bin(ord(ch))[2:].zfill(width)] for ch in text])


def inputs(size: str) -> dict[str, Any]:
    if size not in SIZES:
        raise InputError(f"no workload {size!r}")
    rs = np.random.RandomState(SEED)
    text = "".join(chr(v) for v in rs.randint(32, 127, size=max(C)))
    for l, c in WORKLOADS:
        use = text[:c]
        width = int(np.ceil(np.log2(max(ord(ch) for ch in use))))
        sequence = bits(use, width)
        state = rs.random_sample((2 * l, width))
        main = rs.random_sample((2 * l, 4 * width))
        extra = rs.random_sample((3, width))
        if size == f"l={l},c={c}":
            return {"main_params": main.tolist(), "extra_params": extra.tolist(),
                    "state": state.tolist(), "sequence": sequence.tolist()}
    raise AssertionError(size)


def prepare(input: dict[str, Any]) -> Prepared:
    main, extra = floats(input, "main_params", 2), floats(input, "extra_params", 2)
    state, sequence = floats(input, "state", 2), floats(input, "sequence", 2)
    b = extra.shape[1]
    layers = main.shape[0] // 2
    if (extra.shape[0] != 3 or b == 0 or layers == 0 or main.shape != (2 * layers, 4 * b)
            or state.shape != (2 * layers, b) or sequence.shape[1:] != (b,)
            or sequence.shape[0] < 2):
        raise InputError(f"shapes main_params {main.shape}, extra_params {extra.shape}, state "
                         f"{state.shape}, sequence {sequence.shape} do not fit: they must be "
                         "(2l, 4b), (3, b), (2l, b), (c, b) with l >= 1, b >= 1, c >= 2")
    return (), ((main, extra), state, sequence)


def build(function: str, backend: Backend) -> Runner:
    if function == "objective":
        return primal_runner(loss, backend)
    return gradient_runner(loss, backend)


def output(function: str, result: Any) -> Any:
    if function == "objective":
        return to_json(result)
    return np.concatenate([np.reshape(result[0], -1), np.reshape(result[1], -1)]).tolist()


def reference(function: str, input: dict[str, Any]) -> Any:
    _, ((main, extra), state, sequence) = prepare(input)
    if function == "objective":
        return objective_by_hand(main, extra, state, sequence)
    return output("jacobian", jacobian_by_hand(main, extra, state, sequence))


EVAL = Eval("lstm", ("objective", "jacobian"), SIZES, inputs, prepare, build, output, reference,
            "ADBench's LSTM (diagonal weights) loss and its gradient; inputs not GradBench's")
