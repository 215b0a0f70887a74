"""What an upstream task's Dockerfile says beyond its `sse/` folder, read as data: the final
stage's environment (`ENV`, as its values expand where the file alone tells them) and what it
makes of the image's /ssebench that `sse/` does not hold."""

from __future__ import annotations

from ssebench.evaluate.importers.dockerfile import image_env, image_made

# As the Go tasks of upstream's pilot dataset have it (argo-workflows-2a2ecc9), shortened.
GO_PILOT = """\
ARG SSEBENCH_REGISTRY=ghcr.io/42-b3yond-6ug/ssebench
FROM ${SSEBENCH_REGISTRY}/base-generic-go:1.0.0

WORKDIR /src/argo-workflows

ENV GOPATH="/go"
ENV PATH="$GOPATH/bin:/usr/local/go/bin:$PATH"
ENV GOFLAGS="-mod=vendor"

RUN apt-get update && \\
    apt-get install -y python3 && \\
    rm -rf /var/lib/apt/lists/*
COPY sse/config.yaml /ssebench/config.yaml
COPY sse/pocs /ssebench/pocs

RUN cd /ssebench/pocs && \\
    go mod init poc-argo && \\
    go mod tidy

RUN chmod +x /ssebench/scripts/*.sh
"""
# As its Rust tasks have it (RUSTSEC-2019-0023), shortened.
RUST_PILOT = """\
FROM ghcr.io/42-b3yond-6ug/ssebench/base-generic-rust:1.0.0
COPY ./string-interner /src/string-interner
# Copy harness
COPY ./harness /ssebench/harness
RUN cd /src/string-interner && cargo fetch && cp Cargo.lock /ssebench/harness/Cargo.lock
COPY sse/config.yaml /ssebench/config.yaml
RUN chmod +x /ssebench/scripts/build.sh \\
    && chmod +x /ssebench/scripts/run.sh
"""


def test_the_go_pilots_environment_and_its_poc_module() -> None:
    assert image_env(GO_PILOT) == {"GOPATH": "/go", "GOFLAGS": "-mod=vendor"}
    assert image_made(GO_PILOT) == ["RUN cd /ssebench/pocs && go mod init poc-argo && go mod tidy"]


def test_the_rust_pilots_harness() -> None:
    assert image_env(RUST_PILOT) == {}
    assert image_made(RUST_PILOT) == [
        "COPY ./harness /ssebench/harness",
        "RUN cd /src/string-interner && cargo fetch && cp Cargo.lock /ssebench/harness/Cargo.lock",
    ]


def test_every_form_of_env_and_what_it_cannot_know() -> None:
    text = """\
FROM debian:12 AS tools
ENV FROM_TOOLS=1
FROM debian:12 AS other
ENV NOT_OURS=1
FROM tools
ARG VERSION=2.1
ARG UNSET
ENV A=1 B="two words" C='$A single' D=${A}x
ENV LEGACY some value $A
ENV E=$VERSION F=$UNSET G=$BASE_IMAGES
ENV HOME=/root TMPDIR=/t USER=u LOGNAME=u PATH=/x SSE_DIFFICULTY=0
# ENV COMMENTED=1
ENV A=3
"""
    assert image_env(text) == {
        "FROM_TOOLS": "1",
        "A": "3",
        "B": "two words",
        "C": "1 single",  # docker keeps $A in single quotes as it is: a difference of ours
        "D": "1x",
        "LEGACY": "some value 1",
        "E": "2.1",
    }


def test_nothing_to_read() -> None:
    assert image_env("") == image_env("# only a comment\n") == {}
    assert image_made("") == []
    assert image_made("FROM x\nCOPY sse/pocs /ssebench/pocs\nCOPY ./sse/run.sh /ssebench/x\n") == []
