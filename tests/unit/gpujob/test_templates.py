"""Template syntax, shell quoting per bash context, and eager rendering of a whole job."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from datetime import UTC, datetime

import pytest

from helpers.runpod_configs import MINIMAL_YAML, document, with_sections
from pegboard.adapters.providers import discover_registry
from pegboard.domain.errors import ConfigError
from pegboard.domain.gpujob.spec_validation import parse_job_spec
from pegboard.domain.gpujob.template_syntax import referenced_names
from pegboard.domain.gpujob.templates import (
    RunBuiltins,
    TemplateError,
    default_state_file,
    make_builtins,
    render_job,
    render_shell,
    render_text,
    run_dir_name,
)

BUILTINS = RunBuiltins(
    config_path="/proj/cfg/job.yaml",
    project_root="/proj",
    run_stamp="20260101T000000.000000Z-abcd",
    home="/home/me",
)


def bash(script: str) -> str:
    if shutil.which("bash") is None:
        pytest.skip("bash not installed")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


# --- syntax ---


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{a}-{b}", "1-two"),
        ("{{a}}", "{a}"),
        ("}}{{", "}{"),
        ("${HOME}", "${HOME}"),
        ("${{HOME}}", "${HOME}"),
        ("${a:-${b}}", "${a:-${b}}"),
        ("${{X:-{a}}}", "${X:-1}"),
        ("{ true; } {1..3} {a b}", "{ true; } {1..3} {a b}"),
        ("%d %Y {a}", "%d %Y 1"),
        ("{a}{a}", "11"),
    ],
)
def test_text_rendering(template: str, expected: str) -> None:
    assert render_text(template, {"a": "1", "b": "two"}) == expected


def test_substituted_values_are_not_rescanned() -> None:
    assert render_text("{a}", {"a": "{b}", "b": "no"}) == "{b}"


def test_unknown_variable_names_the_escape() -> None:
    with pytest.raises(TemplateError, match=r"unknown template variable \{HOME\}.*\$\{\{HOME\}\}"):
        render_text("cd {HOME}", {})


def test_unterminated_bash_expansion_is_an_error() -> None:
    with pytest.raises(TemplateError, match="unterminated"):
        render_text("echo ${HOME", {})


def test_referenced_names_skip_escapes_and_bash() -> None:
    assert referenced_names("{a} {{b}} ${c} ${{d}} {a} {e}") == ("a", "e")


# --- shell contexts ---

NASTY = 'it\'s a "test" $(touch /tmp/x) `id` \\ ; rm -rf / #'


@pytest.mark.parametrize(
    "template",
    [
        "printf '%s' {v}",
        'printf "%s" "{v}"',
        "printf '%s' '{v}'",
        "printf '%s' $'{v}'",
        "printf '%s' \"$(printf '%s' {v})\"",
        "printf '%s' \"$(printf '%s' \"{v}\")\"",
        "x={v}; printf '%s' \"$x\"",
        "# a comment with {v}\nprintf '%s' {v}",
    ],
)
def test_shell_value_arrives_literally_in_every_context(template: str) -> None:
    assert bash(render_shell(template, {"v": NASTY})) == NASTY


def test_backtick_context() -> None:
    script = render_shell('printf "%s" "`printf %s {v}`"', {"v": "a$b`c\\d"})
    assert bash(script) == "a$b`c\\d"


@pytest.mark.parametrize("delimiter", ["EOF", "'EOF'", '"EOF"'])
def test_here_documents(delimiter: str) -> None:
    template = f"cat <<{delimiter}\nvalue: {{v}}\nEOF\nprintf done"
    assert bash(render_shell(template, {"v": NASTY})) == f"value: {NASTY}\ndone"


def test_value_that_would_end_a_here_document_is_refused() -> None:
    with pytest.raises(TemplateError, match="here-document"):
        render_shell("cat <<EOF\n{v}\nEOF\n", {"v": "x\nEOF\nrm -rf /"})


def test_bash_line_in_body_is_just_text() -> None:
    # 0.8.4 ended its `<<'BASH'` heredoc at such a line; rendering leaves it alone.
    assert render_shell("echo a\nBASH\necho b", {}) == "echo a\nBASH\necho b"


def test_plain_values_are_not_quoted() -> None:
    assert render_shell("cd {d} && echo {s}", {"d": "/workspace/x-1", "s": "42"}) == (
        "cd /workspace/x-1 && echo 42"
    )


# --- run dir names ---


def test_run_dir_name_is_sortable_and_unique_within_a_second() -> None:
    now = datetime(2026, 5, 17, 12, 0, 1, 123456, tzinfo=UTC)
    assert run_dir_name(now, "beef") == "20260517T120001.123456Z-beef"
    assert run_dir_name(now, "beef") != run_dir_name(now, "cafe")
    with pytest.raises(ValueError):
        run_dir_name(now, "../x")


# --- whole job ---


def render(text: str, **cli: str):  # type: ignore[no-untyped-def]
    doc = document(text)
    return render_job(
        parse_job_spec(doc, discover_registry()), cli_vars=cli, builtins=BUILTINS, document=doc
    )


SWEEP = textwrap.dedent(
    """\
    name: sweep-{backbone}-s{seed}
    run_id_prefix: sweep-{backbone}
    variables:
      seed: "0"
      remote_repo: /workspace/{job_name}
      out_dir: "{remote_repo}/s{seed}"
    pod: {image: i, datacenters: [d], gpu_order: [g]}
    storage: {mode: ephemeral, volume_gb: 10}
    setup:
      - command: mkdir -p {out_dir}
    staging:
      - {label: src, source: "{project_root}/", destination: "{remote_repo}/", excludes_extra: ["{job_name}-tmp/"]}
    run:
      script_path: "{remote_repo}/run.sh"
      log_path: "{remote_repo}/run.log"
      success_marker: "[{job_name}] DONE"
      body: |
        cd {remote_repo} && python train.py --seed {seed} --tag {tag}
        echo "[{job_name}] DONE"
    artifacts:
      - {label: out, remote_path: "{out_dir}/", local_path: "out/{run_id}/"}
    """
)


def test_cli_overrides_flow_into_derived_yaml_variables() -> None:
    job = render(SWEEP, seed="7", backbone="bert", tag="a b")
    assert job.job_name == "sweep-bert-s7"
    assert job.run_id == "sweep-bert-20260101T000000.000000Z-abcd"
    assert job.variables["out_dir"] == "/workspace/sweep-bert-s7/s7"
    assert job.setup[0].command == "mkdir -p /workspace/sweep-bert-s7/s7"
    assert job.run.body.splitlines()[0] == (
        "cd /workspace/sweep-bert-s7 && python train.py --seed 7 --tag 'a b'"
    )
    assert job.run.success_marker == "[sweep-bert-s7] DONE"
    assert job.staging[0].source == "/proj/"
    assert job.staging[0].excludes == ("sweep-bert-s7-tmp/",)
    assert job.artifacts[0].local_path == f"/proj/out/{job.run_id}/"
    assert job.run_dir == "/proj/artifacts/runpod/20260101T000000.000000Z-abcd"


def test_unknown_variables_are_found_before_any_pod_with_line_and_path() -> None:
    with pytest.raises(ConfigError) as caught:
        render(SWEEP, seed="7")
    found = [(p.line, p.path) for p in caught.value.problems]
    assert (1, "name") in found and (2, "run_id_prefix") in found
    assert (17, "run.body") in found and (3, "variables") not in found
    assert all("{backbone}" in p.message or "{tag}" in p.message for p in caught.value.problems)


def test_cycles_are_reported() -> None:
    text = with_sections(variables={"a": "{b}", "b": "{a}"}, name="n-{a}")
    with pytest.raises(ConfigError, match=r"cycle: (a -> b -> a|b -> a -> b)"):
        render(text)


def test_name_may_not_reference_itself_through_job_name() -> None:
    with pytest.raises(ConfigError, match="cycle"):
        render(with_sections(name="x-{job_name}"))


def test_cli_may_not_override_builtins() -> None:
    with pytest.raises(ConfigError, match="--var run_dir: is a built-in"):
        render(MINIMAL_YAML, run_dir="/tmp")


def test_percent_in_name_is_literal() -> None:
    job = render(with_sections(name="job-%d-%Y"))
    assert job.job_name == "job-%d-%Y" and job.run_id.startswith("job-%d-%Y-")


def test_state_file_is_templated_and_defaults_per_config() -> None:
    explicit = render(with_sections(state_file="~/.state-{job_name}"))
    assert explicit.state_file == "/home/me/.state-hello"
    default = render(MINIMAL_YAML)
    assert default.state_file.startswith("/home/me/.local/state/runpod-deploy/hello-")  # XDG
    other = default_state_file(config_path="/proj/other.yaml", job_name="hello")
    assert other != default_state_file(config_path="/proj/cfg/job.yaml", job_name="hello")


def test_python_pin_is_quoted_and_runs_first() -> None:
    text = with_sections(
        pod={"image": "i", "datacenters": ["d"], "gpu_order": ["g"], "python_version": "3.13"},
        staging=[{"label": "s", "source": "x/", "destination": "/work space/"}],
        preflight=[{"command": "uv sync"}],
    )
    job = render(text)
    assert [c.command for c in job.all_preflight] == [
        "uv python install 3.13 && cd '/work space/' && uv python pin 3.13",
        "uv sync",
    ]


def test_remote_env_prefix_quotes_values() -> None:
    job = render(
        with_sections(
            remote_env={
                "source_files": ["{volume_mount}/.env"],
                "exports": {"X": "a b; {job_name}"},
            }
        )
    )
    prefix = job.remote_env.shell_prefix()
    assert prefix == (
        "if [ -f /workspace/.env ]; then . /workspace/.env; fi; export X='a b; hello'; "
    )


def test_home_project_root_is_refused() -> None:
    doc = document(with_sections(local={"project_root": "~"}), source="/home/me/job.yaml")
    spec = parse_job_spec(doc, discover_registry())
    with pytest.raises(ConfigError, match=r"local.project_root: resolves to your home"):
        make_builtins(
            spec, document=doc, config_path="/home/me/job.yaml", home="/home/me", run_stamp="s"
        )
    doc = document(with_sections(local={"project_root": ".."}), source="/home/me/p/job.yaml")
    with pytest.raises(ConfigError):
        make_builtins(
            parse_job_spec(doc, discover_registry()),
            document=doc,
            config_path="/home/me/p/job.yaml",
            home="/home/me",
            run_stamp="s",
        )


def test_cli_variables_no_field_uses_are_reported() -> None:
    text = with_sections(
        name="n-{tag}",
        variables={"out": "/w/{seed}", "unused_yaml": "{fed}"},
        run={"script_path": "{out}/r.sh", "log_path": "/l", "success_marker": "x", "body": "b"},
    )
    job = render(text, seed="1", tag="t", greting="hi", fed="only-an-unused-yaml-variable")
    # seed reaches a field through `out`, tag through the name; greting reaches nothing, and
    # fed only an unused YAML variable.
    assert job.unused_cli_vars == ("fed", "greting")
    # Overriding a YAML variable is never a typo, even when no field uses it.
    assert render(text, seed="1", tag="t", unused_yaml="x").unused_cli_vars == ()
