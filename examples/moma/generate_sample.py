"""Writes data/artists.csv and data/artworks.csv: a small sample in the shape of MoMA's collection (its columns,
its gaps and its quirks), drawn from a fixed seed. Run it again after changing it: `python generate_sample.py`."""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
from decimal import Decimal
from pathlib import Path

SEED = 1929  # the museum's founding year
ARTISTS, ARTWORKS = 150, 240
NATIONALITIES = ["American", "French", "German", "British", "Japanese", "Mexican", "Italian", "Russian", ""]
GENDERS = ["Male", "Female", "Non-Binary", ""]
DEPARTMENTS = ["Drawings & Prints", "Photography", "Architecture & Design", "Painting & Sculpture",
               "Media and Performance", "Film"]
CLASSIFICATIONS = ["Print", "Photograph", "Drawing", "Painting", "Sculpture", "Video", "Design"]
MEDIA = ["Gelatin silver print", "Oil on canvas", "Lithograph", "Pencil on paper", "Video (color, sound)", ""]
DATE_TEXTS = ["{y}", "c. {y}", "{y}-{z}", "n.d.", "{y}, printed {z}", "Unknown", ""]


def artists(rng: random.Random) -> list[dict]:
    rows = []
    for constituent_id in rng.sample(range(1, 140_000), ARTISTS):
        born = rng.choice([0, 0, rng.randint(1780, 1995)])
        died = 0 if not born or rng.random() < 0.5 else min(born + rng.randint(20, 100), 2024)
        nationality = rng.choice(NATIONALITIES)
        rows.append({"constituent_id": constituent_id, "display_name": f"Artist {constituent_id}",
                     "artist_bio": f"{nationality}, {born}–{died or ''}" if born else "",
                     "nationality": nationality, "gender": rng.choice(GENDERS), "begin_date": born,
                     "end_date": died, "wiki_qid": f"Q{rng.randint(1, 10**8)}" if rng.random() < 0.3 else "",
                     "ulan": str(rng.randint(500000000, 500999999)) if rng.random() < 0.3 else ""})
    return rows


def centimetres(rng: random.Random) -> str:
    """The collection's dimensions: often converted from inches, with fractions 15 digits long."""
    if rng.random() < 0.25:
        return ""
    inches = Decimal(rng.randint(1, 4000)) / Decimal(rng.choice([8, 16, 127]))
    return str((inches * Decimal("2.54")).quantize(Decimal("1E-15")))


def artworks(rng: random.Random, constituents: list[int]) -> list[dict]:
    rows = []
    for number, object_id in enumerate(rng.sample(range(2, 500_000), ARTWORKS), start=1):
        year = rng.randint(1850, 2020)
        acquired = dt.date(1929, 11, 7) + dt.timedelta(days=rng.randint(0, 34_000))
        rows.append({"object_id": object_id, "accession_number": f"{number}.{acquired.year}",
                     "title": rng.choice(["Untitled", "Composition", f"Study {rng.randint(1, 40)}", ""]),
                     "constituent_ids": json.dumps(rng.sample(constituents, rng.choice([1, 1, 1, 2, 3]))),
                     "date_text": rng.choice(DATE_TEXTS).format(y=year, z=year + rng.randint(1, 30)),
                     "medium": rng.choice(MEDIA), "dimensions": "",
                     "height_cm": centimetres(rng), "width_cm": centimetres(rng), "depth_cm": centimetres(rng),
                     "weight_kg": "" if rng.random() < 0.9 else centimetres(rng),
                     "department": rng.choice(DEPARTMENTS), "classification": rng.choice(CLASSIFICATIONS),
                     "date_acquired": acquired.isoformat() if rng.random() < 0.9 else "",
                     "cataloged": rng.choice(["true", "false"])})
    return rows


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    rng = random.Random(SEED)
    people = artists(rng)
    here = Path(__file__).parent / "data"
    write(here / "artists.csv", people)
    write(here / "artworks.csv", artworks(rng, [p["constituent_id"] for p in people]))
