from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

CASES = ("api", "eventing", "compute", "assets", "registry", "sweeper", "load", "pages", "search")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["chaos"]:
        # Not a benchmark on the shared stack: the drill brings servers it can restart.
        from bench.chaos import main as chaos

        return chaos(argv[1:])
    if argv[:1] == ["soak"]:
        # The drill's own stack too, under steady traffic instead of faults.
        from bench.soak import main as soak

        return soak(argv[1:])
    if argv[:1] == ["cluster"]:
        # Nodes in network namespaces, each kind lost in turn, and servers failing over.
        from bench.cluster import main as cluster

        return cluster(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument(
        "name", nargs="?", choices=[*CASES, "all", "chaos", "soak", "cluster"], default="all"
    )
    parser.add_argument("--quick", action="store_true", help="finish within a minute")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from bench.harness import scratch_database

    names = CASES if args.name == "all" else (args.name,)
    results = []
    with scratch_database():
        for name in names:
            module = importlib.import_module(f"bench.{name}")
            results.append(module.run(quick=args.quick))
    for result in results[:-1]:
        print(json.dumps(result))
    print(json.dumps(results[-1] if len(results) == 1 else {"cases": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
