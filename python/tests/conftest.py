"""Shared fixtures: where the repository's data is, and small random inputs."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("SYNATTN_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)  # reference.py


def data_path(*parts):
    return os.path.join(ROOT, *parts)


EWT_DEV = data_path("data", "ud", "UD_English-EWT", "en_ewt-ud-dev.conllu")
EWT_TRAIN = data_path("data", "ud", "UD_English-EWT", "en_ewt-ud-train.conllu")
GOLDEN = data_path("tests", "golden", "mha")


@pytest.fixture(scope="session")
def ewt_dev():
    import synattn
    return synattn.read_conllu(EWT_DEV)
