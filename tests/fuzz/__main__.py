"""``python -m tests.fuzz --n 20000 --seed 1 [--x64]``: a long fuzzing campaign."""
import argparse

import hlox
from tests.fuzz import runner

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=20000)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--x64", action="store_true")
args = parser.parse_args()
hlox.config.update("enable_x64", args.x64)
print(runner.run(args.seed, args.n))
