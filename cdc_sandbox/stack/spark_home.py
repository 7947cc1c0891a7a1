"""The machine's Spark home: the installed PySpark's launcher scripts and jars under the tools directory, where
every driver, and the standalone cluster's daemons and executors, start from one path (which the driver's class
archive, `class_sharing.driver_java_options`, needs)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.stack import install

SPARK_HOME_PARTS = ("bin", "python")  # the launcher scripts, and the Python files Spark puts on its Python's path


def spark_home(settings: Settings) -> Path:
    """The installed PySpark's launcher and jars under the machine's tools directory (jars hard-linked where the file
    system allows), made once per PySpark build."""
    import pyspark

    source = Path(pyspark.__file__).parent
    jars = sorted((source / "jars").glob("*.jar"))
    listing = "".join(f"{jar.name}:{jar.stat().st_size}\n" for jar in jars)
    home = settings.tools_dir / f"spark-{pyspark.__version__}-{hashlib.sha256(listing.encode()).hexdigest()[:12]}"
    if not home.exists():
        with install.tools_lock(settings):
            if not home.exists():
                _assemble(source, jars, home)
    return home


def _assemble(source: Path, jars: list[Path], home: Path) -> None:
    partial = home.with_name(f"{home.name}.{os.getpid()}.part")
    shutil.rmtree(partial, ignore_errors=True)
    for part in SPARK_HOME_PARTS:
        shutil.copytree(source / part, partial / part, symlinks=True)
    (partial / "jars").mkdir()
    for jar in jars:
        try:
            os.link(jar, partial / "jars" / jar.name)
        except OSError:  # another file system
            shutil.copy2(jar, partial / "jars" / jar.name)
    os.replace(partial, home)
