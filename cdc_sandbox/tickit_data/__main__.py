"""Command line: `python -m cdc_sandbox.tickit_data generate --out DIR --seed N --scale X`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .generator import TickitGenerator, build_manifest
from .reader import TickitFormatError, read_tickit_directory
from .schema import TABLES

MANIFEST_FILE = "manifest.json"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cdc_sandbox.tickit_data", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    generate = commands.add_parser("generate", help="write the seven TICKIT files")
    generate.add_argument("--out", required=True, type=Path, help="output directory (created if missing)")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--scale", type=float, default=1.0, help="1.0 = the published row counts")
    generate.add_argument(
        "--manifest", action="store_true", help=f"also write {MANIFEST_FILE} with per-table checksums"
    )

    manifest = commands.add_parser("manifest", help="print row counts and checksums of a TICKIT directory")
    manifest.add_argument("directory", type=Path)
    return parser.parse_args(argv)


def _generate(args: argparse.Namespace) -> int:
    try:
        generator = TickitGenerator(args.seed, args.scale)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    counts = generator.write_files(args.out)
    elapsed = time.perf_counter() - started
    for table in TABLES:
        print(f"{table.tickit_file:<20} {table.name:<9} {counts[table.name]:>9,} rows")
    print(f"{'total':<30} {sum(counts.values()):>9,} rows written to {args.out} in {elapsed:.2f} s")
    if args.manifest:
        checksums = generator.manifest()
        manifest = {name: checksum.to_dict() for name, checksum in checksums.items()}
        (args.out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        print(f"checksums written to {args.out / MANIFEST_FILE}")
    return 0


def _manifest(args: argparse.Namespace) -> int:
    try:
        checksums = build_manifest(read_tickit_directory(args.directory))
    except (FileNotFoundError, TickitFormatError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({name: checksum.to_dict() for name, checksum in checksums.items()}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    return {"generate": _generate, "manifest": _manifest}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
