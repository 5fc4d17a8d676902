import pytest

import fastinfer


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device and torch")


def pytest_collection_modifyitems(config, items):
    if fastinfer.cuda_device_count() > 0:
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    gpu = [item for item in items if "gpu" in item.keywords]
    for item in gpu:
        item.add_marker(skip)
    if gpu:
        print(f"\nno CUDA device: {len(gpu)} GPU tests skipped")
