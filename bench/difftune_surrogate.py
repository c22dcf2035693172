"""DiffTune's surrogate: train within a time budget and score it on held-out blocks × random θ (the simulator's
cycles), on the CPU at small size or on a GPU at DiffTune's full size.

Data, one of:
- built here (default): the anchor blocks × ``--seeds`` random tables under ``--arch``, simulated on 2 processes;
- ``--samples FILE.npz``: a data set's ``block``, ``seed`` and ``cycles`` arrays (``tunelab difftune dataset``'s
  rows) over the ``ok`` blocks of ``--blocks CSV`` (a ``tunelab blocks export`` file) in file order, tables drawn
  under ``--arch``'s llvm-mca model read from ``--cache`` (nothing here calls llvm-mca when it is cached).

Usage:
  python bench/difftune_surrogate.py [--seeds 100] [--minutes 20] [--hidden 64] [--layers 2]
  python bench/difftune_surrogate.py --samples S.npz --blocks data/difftune/amd-25-1-1.csv.gz --arch znver3 \\
      --device cuda --embedding 256 --hidden 256 --layers 4 --minutes 6 --workers 16
A folder holding a checkpoint of the same configuration is resumed (delete it to start over). On a GPU the run
first trains one epoch of a small slice to measure the rate, then keeps the samples that fit ``--epochs`` epochs
in ``--minutes`` (``--fit`` does so on the CPU too); a step past ``--minutes`` × 1.2 stops the run at the last
checkpoint (once there is one).
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.surrogates._torch import available_cpus, torch
from engine.surrogates.difftune import bhive
from engine.surrogates.difftune.decode import Block, block_from_document, decode_blocks
from engine.surrogates.difftune.defaults import default_table
from engine.surrogates.difftune.encoding import encode
from engine.surrogates.difftune.measure import cpu_identity
from engine.surrogates.difftune.noise import read_measured
from engine.surrogates.difftune.params import ParamTable
from engine.surrogates.difftune.sampling import sample_table
from engine.surrogates.difftune.surrogate import Featuriser, ParamLstm, Surrogate, SurrogateConfig, capacities
from engine.surrogates.difftune.tokens import Vocabulary
from engine.surrogates.difftune.train import CHECKPOINT, Samples, TrainConfig, evaluate, history, load_surrogate, split_blocks, train

THREADS = 2
#: Samples of the rate probe on a GPU: enough for the rate at full batches, a few seconds.
PROBE = 100_000


def _simulate_chunk(job: tuple[list[Block], list[int], ParamTable, int]) -> list[tuple[int, int, int]]:
    from engine.surrogates.difftune.simulate import simulate  # numba: only where the data is built here

    blocks, indices, model, seeds = job
    out = []
    for block, index in zip(blocks, indices):
        keys = {i.key for i in block.instructions}
        for s in range(seeds):
            seed = index * seeds + s
            out.append((index, seed, int(simulate([block], sample_table(keys, model, seed))[0])))
    return out


def build(blocks: list[Block], model: ParamTable, seeds: int) -> pd.DataFrame:
    """``seeds`` random tables per block (distinct seeds across blocks), simulated on ``THREADS`` processes."""
    jobs = [(blocks[i::THREADS * 8], list(range(i, len(blocks), THREADS * 8)), model, seeds) for i in range(THREADS * 8)]
    with ProcessPoolExecutor(THREADS) as pool:
        rows = [r for chunk in pool.map(_simulate_chunk, jobs) for r in chunk]
    return pd.DataFrame(rows, columns=["block", "seed", "cycles"]).sort_values(["block", "seed"], ignore_index=True)




def _measured_blocks(path: str, decoded_file: str | None) -> list[Block]:
    """The ``ok`` blocks of a blocks CSV, decoded here or read from a ``--decoded`` file (hex → the block's
    instructions as ``block_document`` writes them): a machine without llvm-mc-19 decodes nothing."""
    frame = read_measured(Path(path))
    hexes = frame.loc[frame["status"] == "ok", "hex"].tolist()
    if decoded_file is None:
        return [b for b in decode_blocks(hexes) if isinstance(b, Block)]
    with gzip.open(decoded_file, "rt") as handle:
        documents = json.load(handle)
    return [block_from_document(h, documents[h]) for h in hexes if h in documents]


def _data(args: argparse.Namespace) -> Samples:
    if args.samples:
        blocks = _measured_blocks(args.blocks, args.decoded)
        model = default_table(blocks, args.arch, args.cache)
        with np.load(args.samples) as arrays:
            frame = pd.DataFrame({c: arrays[c] for c in ("block", "seed", "cycles")})
        if int(frame["block"].max()) >= len(blocks):
            raise SystemExit(f"--samples: block {int(frame['block'].max())} past the {len(blocks):,} blocks of --blocks")
        print(f"data: {len(frame):,} samples over {len(blocks):,} blocks of {args.blocks}, {args.arch} tables")
        return Samples(frame, blocks, model)
    anchor = bhive.anchor()
    decoded = decode_blocks(list(anchor["hex"].head(args.limit) if args.limit else anchor["hex"]))
    blocks = [b for b in decoded if isinstance(b, Block)]
    model = default_table(blocks, args.arch, args.cache)
    start = time.perf_counter()
    frame = build(blocks, model, args.seeds)
    built = time.perf_counter() - start
    print(f"data: {len(blocks)} blocks × {args.seeds} tables = {len(frame):,} samples in {built:.0f} s "
          f"({len(frame) / built:,.0f} samples/s on {THREADS} processes); cycles median {frame['cycles'].median():.0f}")
    return Samples(frame, blocks, model)


def _export(surrogate: Surrogate, config: TrainConfig, folder: Path, limit: int = 12 * 2**20) -> None:
    """The trained network as weight files of at most ``limit`` bytes each (a GPU machine hands back small files
    only) and a JSON of what rebuilds it (sizes, vocabulary, resources): tensors and plain values only."""
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in surrogate.network.state_dict().items():
        bytes_ = tensor.numel() * tensor.element_size()
        if parts[-1] and size + bytes_ > limit:
            parts.append({})
            size = 0
        parts[-1][name] = tensor.detach().cpu().contiguous()
        size += bytes_
    for i, part in enumerate(parts):
        torch.save(part, folder / f"weights-{i}.pt")
    (folder / "surrogate.json").write_text(json.dumps({
        "config": asdict(config), "vocabulary": surrogate.featuriser.vocabulary.to_document(),
        "resources": surrogate.featuriser.resources, "parts": len(parts)}))


def _bound_mape(surrogate: Surrogate, samples: Samples, batch: int = 4096) -> float:
    """MAPE of the throughput bound alone (the larger of the dispatch and busiest-resource limits, no network)."""
    encoded = encode(samples.frame, samples.blocks, samples.model, surrogate.featuriser)
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(encoded), batch):
            (tokens, block_of, rows, globals_), cycles = encoded.batch(np.arange(start, min(start + batch, len(encoded))))
            bound = torch.maximum(*surrogate.network.bounds(rows, globals_, tokens.lengths[block_of]))
            total += float(((bound - cycles).abs() / cycles).sum())
    return total / max(len(encoded), 1)


def _imported(folder: Path, model: ParamTable) -> Surrogate:
    """A network :func:`_export` wrote for tables of ``model``'s resource model, read as tensors and plain values
    only."""
    meta = json.loads((folder / "surrogate.json").read_text())
    config = TrainConfig(**meta["config"])
    featuriser = Featuriser(Vocabulary.from_document(meta["vocabulary"]), meta["resources"])
    network = ParamLstm(SurrogateConfig(len(featuriser.vocabulary), featuriser.features, config.embedding,
                                        config.hidden, config.layers, capacities(model) if config.bound else ()))
    weights: dict[str, torch.Tensor] = {}
    for i in range(int(meta["parts"])):
        weights.update(torch.load(folder / f"weights-{i}.pt", weights_only=True, map_location="cpu"))
    network.load_state_dict(weights)
    return Surrogate(network.train(False), featuriser)


class _Deadline(Exception):
    """A step past the hard limit: the run stops at its last checkpoint."""


def _rate(samples: Samples, config: TrainConfig, device: str, folder: Path, workers: int) -> float:
    """Training samples per second on ``device``, from one epoch of a slice (the warm-up's second half)."""
    train_blocks = split_blocks(len(samples.blocks), config.split_seed)[0]
    piece = samples.restrict(train_blocks)
    piece = Samples(piece.frame.iloc[:PROBE], piece.blocks, piece.model)
    _, curves = train(piece, folder, epochs=1, config=config, device=device, workers=workers)
    steps = curves[curves["step"] > len(curves) // 2]
    seconds = float(steps["seconds"].max() - curves.loc[curves["step"] <= len(curves) // 2, "seconds"].max())
    return len(steps) * config.batch / max(seconds, 1e-9)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="built data: random tables per block")
    parser.add_argument("--limit", type=int, default=0, help="built data: the first N anchor blocks only")
    parser.add_argument("--samples", help="a data set's block/seed/cycles arrays (.npz)")
    parser.add_argument("--blocks", default="data/difftune/amd-25-1-1.csv.gz", help="with --samples: the blocks CSV")
    parser.add_argument("--decoded", help="with --samples: the blocks decoded elsewhere (.json.gz of hex → "
                                          "block_document), for a machine without llvm-mc-19")
    parser.add_argument("--arch", default="haswell", help="llvm-mca -mcpu of the tables' resource model")
    parser.add_argument("--minutes", type=float, default=20.0, help="training budget")
    parser.add_argument("--epochs", type=int, default=1000, help="epochs (on a GPU: at least this many, the data cut "
                                                                 "to fit them, more when all of it fits more)")
    parser.add_argument("--embedding", type=int, default=0, help="token embedding (default: --hidden)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--no-bound", action="store_true", help="DiffTune's own head, without the throughput bound")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--train-samples", type=int, default=0, help="without --fit: the first N samples of the train "
                                                                     "and validation blocks only (an ablation's equal data)")
    parser.add_argument("--fit", action="store_true", help="measure the rate and cut the data to fit (on a GPU always)")
    parser.add_argument("--workers", type=int, default=1, help="processes encoding the samples' tables")
    parser.add_argument("--export", help="also write the network as small weight files and a JSON to this folder")
    parser.add_argument("--load", help="score a network --export wrote instead of training one")
    parser.add_argument("--test-limit", type=int, default=0, help="with --load: the first N test samples only")
    parser.add_argument("--folder", default=".cache/difftune/surrogate_bench")
    parser.add_argument("--cache", default=".cache/difftune")
    args = parser.parse_args()
    if args.device == "cpu":
        torch.set_num_threads(min(THREADS, available_cpus()))
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "none"
    print(f"CPU {cpu_identity().label} ({available_cpus()} usable); torch {torch.__version__}, threads {torch.get_num_threads()}; GPU {gpu}")
    samples = _data(args)
    train_b, val_b, test_b = split_blocks(len(samples.blocks))
    config = TrainConfig(embedding=args.embedding or args.hidden, hidden=args.hidden, layers=args.layers,
                         batch=args.batch, lr=args.lr, bound=not args.no_bound)
    folder = Path(args.folder)
    if args.load:
        test = samples.restrict(test_b)
        test = Samples(test.frame.iloc[:args.test_limit or None], test.blocks, test.model)
        imported = _imported(Path(args.load), samples.model)
        mape = evaluate(imported, test, device=args.device, workers=args.workers)
        print(f"exported network {args.load} on {len(test.frame):,} test samples ({len(test_b)} held-out blocks): "
              f"TEST MAPE {mape:.2%}", flush=True)
        if imported.network.config.capacities:
            print(f"the throughput bound alone (no network) on the same samples: MAPE {_bound_mape(imported, test):.2%}")
        return
    train_samples = samples.restrict(np.concatenate([train_b, val_b]))
    if args.device != "cpu" or args.fit:
        rate = _rate(samples, config, args.device, folder / "probe", args.workers)
        passes = rate * 60 * args.minutes  # train + validation rows: 9/8 of the rows trained, a margin for validation
        available = len(train_samples.frame)
        epochs = max(args.epochs, int(passes / available))
        wanted = min(available, int(passes / epochs))
        print(f"rate probe: {rate:,.0f} training samples/s: {epochs} epochs of {wanted:,} samples of train + "
              f"validation blocks (of {available:,}) fit in {args.minutes} min", flush=True)
        train_samples = Samples(train_samples.frame.iloc[:wanted], samples.blocks, samples.model)
    else:
        epochs = args.epochs
        if args.train_samples:
            train_samples = Samples(train_samples.frame.iloc[:args.train_samples], samples.blocks, samples.model)
    started = time.perf_counter()
    hard = 60 * args.minutes * 1.2
    first_step: list[float] = []

    def watch(step: dict[str, Any]) -> None:
        first_step[:] = first_step or [time.perf_counter()]
        if time.perf_counter() - first_step[0] > hard and (folder / "run" / CHECKPOINT).is_file():
            raise _Deadline
        if step["step"] % 500 == 0:
            print(f"  step {step['step']:,} (epoch {step['epoch']}): EMA loss {step['ema']:.4f}, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)

    try:
        surrogate, curves = train(train_samples, folder / "run", epochs=epochs, config=config,
                                   max_seconds=66 * args.minutes, on_step=watch, device=args.device, workers=args.workers)
    except _Deadline:
        print(f"stopped at the {hard:.0f} s hard limit: scoring the last checkpoint")
        surrogate, curves = load_surrogate(folder / "run"), history(folder / "run")
    trained = time.perf_counter() - started
    epochs = curves.groupby("epoch")["seconds"].max()
    for row in curves.dropna(subset=["val_mape"]).to_dict("records"):
        print(f"  epoch {row['epoch']:.0f}: step {row['step']:.0f}, EMA loss {row['ema']:.4f}, val MAPE {row['val_mape']:.2%}")
    test = samples.restrict(test_b)
    start = time.perf_counter()
    test_mape = evaluate(surrogate, test, device=args.device, workers=args.workers)
    n_train = int(train_samples.frame["block"].isin(train_b).sum())
    print(f"train {n_train:,} samples ({len(train_b)} blocks), val {len(val_b)} blocks, test {len(test.frame):,} samples "
          f"({len(test_b)} blocks, scored in {time.perf_counter() - start:.0f} s); embedding {config.embedding}, "
          f"hidden {args.hidden}, {args.layers} layers, batch {args.batch}, lr {args.lr}, bound {config.bound}, "
          f"{sum(p.numel() for p in surrogate.network.parameters()):,} weights")
    print(f"epochs {len(epochs)}, {np.mean(epochs):.0f} s per epoch, {trained:.0f} s in this run (with encoding)")
    print(f"TEST MAPE (held-out blocks × random θ): {test_mape:.2%}  (goal ≤ 10%)")
    if args.device.startswith("cuda"):
        print(f"GPU memory at most {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB allocated")
    if args.export:
        _export(surrogate, config, Path(args.export))


if __name__ == "__main__":
    main()
