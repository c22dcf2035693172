"""What a folder of generated cost-model files holds (data/costmodel/README.md's tables): programs, samples, error
and unstable runs, the noise floor (|log| of pass 1 ÷ pass 2 of each configuration's minimum) and, for the tile
task, how often the best chunk size is interior and how much slower the compiler's default runs.

Usage: python bench/costmodel_data.py [FOLDER ...]   (default: the committed tile, joint and absolute folders; with
more than one folder, a last line adds them up)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from engine.io.paths import REPO_ROOT


def summarise(folder: Path) -> tuple[int, int]:
    """Print the folder's figures; return its (programs, samples)."""
    files = sorted(folder.glob("*.npz"))
    programs, samples, errors, unstable, small = set(), 0, 0, 0, 0
    noise: list[float] = []
    load: list[float] = []
    interior, clear, default_ratio, nodes, cpu = 0, 0, [], [], set()
    task = ""
    for path in files:
        with np.load(path, allow_pickle=False) as f:  # an .npz from elsewhere must not run code
            task = str(f["task"])
            programs.add(str(f["program"]))
            runtime = f["config_runtime"].astype(float)
            ok = runtime > 0
            samples += int(ok.sum())
            errors += int((~ok).sum())
            unstable += int(f["config_unstable"].sum())
            small += int(f["config_small"].sum())
            passes = f["config_pass_ns"].astype(float)
            both = ok & np.isfinite(passes[:, :2]).all(axis=1) & (passes[:, :2] > 0).all(axis=1)
            noise += np.abs(np.log(passes[both, 0] / passes[both, 1])).tolist()
            load += f["config_loadavg"][np.isfinite(f["config_loadavg"])].ravel().tolist()
            nodes.append(len(f["node_opcode"]))
            cpu.add(str(f["cpu_model"]))
            if task == "tile" and ok.all():
                batch = f["config_feat"][:, 0]
                order = np.argsort(batch)
                best = int(np.argmin(runtime[order]))
                interior += 0 < best < len(order) - 1
                clear += 0 < best < len(order) - 1 and runtime[order][best] * 1.05 < min(runtime[order][0], runtime[order][-1])
                default_ratio.append(runtime[f["config_is_default"].astype(bool)][0] / runtime.min())
    noise_a = np.array(noise)
    print(f"{folder}: task {task}, {len(programs)} programs, {len(files)} files, {samples} samples, {errors} error runs, "
          f"{small} under 50 µs, {unstable} unstable; CPU {', '.join(sorted(cpu))}")
    print(f"  graph nodes: median {np.median(nodes):.0f} (min {min(nodes)}, max {max(nodes)}); "
          f"load average as passes ended: median {np.median(load):.2f}, max {max(load):.2f}")
    print(f"  noise floor, |log(pass 1 / pass 2)| over {len(noise_a)} configurations: median {np.median(noise_a):.2%}, "
          f"p90 {np.quantile(noise_a, 0.9):.2%}, max {noise_a.max():.1%}")
    if task == "tile" and default_ratio:
        n = len(default_ratio)
        print(f"  best chunk interior in {interior}/{n} programs ({interior / n:.0%}), beating both ends by > 5% in {clear} "
              f"({clear / n:.0%}); default ÷ best: median {np.median(default_ratio):.2f}, p90 {np.quantile(default_ratio, 0.9):.2f}")
    return len(programs), samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="folders of generated .npz files")
    folders = parser.parse_args().folders or [REPO_ROOT / "data" / "costmodel" / name for name in ("tile", "joint", "large", "absolute")]
    missing = [folder for folder in folders if not folder.is_dir()]
    if missing:
        parser.error(f"folder: {missing[0]} is not a folder")
    totals = [summarise(folder) for folder in folders]
    if len(totals) > 1:
        print(f"all {len(totals)} folders: {sum(p for p, _ in totals):,} programs, {sum(s for _, s in totals):,} samples")


if __name__ == "__main__":
    main()
