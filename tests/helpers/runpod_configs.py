"""Minimal runpod-deploy job configs for tests, as YAML text or as parsed JobSpecs."""

from __future__ import annotations

import textwrap
from typing import Any

from pegboard.adapters.providers import discover_registry
from pegboard.adapters.yaml_documents import parse_yaml_document
from pegboard.domain.documents import SourceDocument
from pegboard.domain.gpujob.spec import JobSpec
from pegboard.domain.gpujob.spec_validation import parse_job_spec

MINIMAL_YAML = textwrap.dedent(
    """\
    schema_version: 2
    name: hello
    pod:
      image: runpod/pytorch:2.4.0
      datacenters: [EU-RO-1]
      gpu_order: [NVIDIA RTX A4000]
    storage:
      mode: ephemeral
      volume_gb: 20
    run:
      script_path: /workspace/hello.sh
      log_path: /workspace/hello.log
      success_marker: "[hello] DONE"
      body: |
        echo "[hello] DONE"
    """
)


def document(text: str, source: str = "job.yaml") -> SourceDocument:
    return parse_yaml_document(text, source=source)


def spec_from(text: str, source: str = "job.yaml") -> JobSpec:
    return parse_job_spec(document(text, source), discover_registry())


def with_sections(**sections: Any) -> str:
    """MINIMAL_YAML with top-level keys replaced or added (values dumped as YAML)."""
    import yaml

    data = yaml.safe_load(MINIMAL_YAML)
    for key, value in sections.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return yaml.safe_dump(data, sort_keys=False)
