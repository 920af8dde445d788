# The gatebench runner image: the `gatebench` CLI (ENTRYPOINT) installed from its wheel with the
# non-Python trees packaged (gatebench/_data), Terraform with the Google provider mirrored in
# (builds need no registry at run time), infra/vms, the gatling/ project with its dependencies
# resolved and compiled, a JDK, and the Go backend server. The Cloud Build steps, the tester VMs,
# the backend VM and each gateway VM's meter run it. Built and pushed by
# cloudbuild/runner-image.yaml (docs/cloud.md, "Deploy"); `make test` builds this same file with
# podman (tests/cloud/image.py, docs/cloud.md "How this is tested").
FROM golang:1.23.4-bookworm AS backend
COPY backend/ /src/backend/
RUN cd /src/backend && CGO_ENABLED=0 go build -trimpath -o /out/gatebench-backend .
# The capacity search's load generator (loadgen/, docs/capacity.md), built beside the backend.
COPY loadgen/ /src/loadgen/
RUN cd /src/loadgen && CGO_ENABLED=0 go build -trimpath -o /out/gatebench-loadgen .

FROM hashicorp/terraform:1.9.8 AS terraform

FROM python:3.12.8-slim-bookworm
# `mirror` (the default, what Cloud Build uses): download the Google provider into the image.
# `skip`: everything else, without that download; only for building where the Terraform
# registry is unreachable (`make test`), which then cannot apply infra/vms with this image.
ARG TERRAFORM_PROVIDERS=mirror
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=terraform /bin/terraform /usr/local/bin/terraform
COPY --from=backend /out/gatebench-backend /usr/local/bin/gatebench-backend
ENV GATEBENCH_BACKEND_BIN=/usr/local/bin/gatebench-backend
COPY --from=backend /out/gatebench-loadgen /usr/local/bin/gatebench-loadgen
ENV GATEBENCH_LOADGEN_BIN=/usr/local/bin/gatebench-loadgen

WORKDIR /opt/gatebench
# The same steps as scripts/setup.d/40-gatling.sh: the test classpath resolved once and the
# generic simulation compiled; gatebench starts java with them (GATEBENCH_GATLING_*, which it
# honours before looking for sources or building anything: no Maven run on a VM).
COPY gatling/ gatling/
RUN mvn -q -B -Dmaven.repo.local=/opt/gatebench/m2 -f gatling/pom.xml dependency:build-classpath \
      -Dmdep.includeScope=test -Dmdep.outputFile=/opt/gatebench/gatling/classpath.txt \
 && mvn -q -B -Dmaven.repo.local=/opt/gatebench/m2 -f gatling/pom.xml test-compile
ENV GATEBENCH_GATLING_CLASSES=/opt/gatebench/gatling/target/test-classes \
    GATEBENCH_GATLING_CP=/opt/gatebench/gatling/classpath.txt

# infra/vms calls a local module (modules/images): `terraform get` installs it, without which
# `providers mirror` stops at "Module not installed". The provider mirror then serves every
# `terraform init` of the build steps (infra/vms/terraform-step.sh).
COPY infra/vms/ infra/vms/
RUN terraform -chdir=infra/vms get -no-color \
 && case "$TERRAFORM_PROVIDERS" in \
      mirror) terraform -chdir=infra/vms providers mirror -no-color /opt/gatebench/terraform-providers ;; \
      skip) mkdir -p /opt/gatebench/terraform-providers ;; \
      *) echo "TERRAFORM_PROVIDERS must be mirror or skip, got: $TERRAFORM_PROVIDERS" >&2; exit 1 ;; \
    esac \
 && rm -rf infra/vms/.terraform \
 && printf 'provider_installation {\n  filesystem_mirror {\n    path = "/opt/gatebench/terraform-providers"\n  }\n}\n' > /opt/gatebench/terraformrc
ENV TF_CLI_CONFIG_FILE=/opt/gatebench/terraformrc TF_IN_AUTOMATION=1

# The dependencies first (exact versions from the lock; the runtime and the cloud extra, as
# pyproject.toml lists them), so a change to src/ rebuilds only the last layer.
COPY pyproject.toml README.md ./
COPY requirements/ requirements/
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['cloud']))" > /tmp/requirements.txt \
 && python -m pip install --no-cache-dir --constraint requirements/dev.lock --requirement /tmp/requirements.txt \
 && rm /tmp/requirements.txt
# The wheel: setup.py copies backend/, loadgen/, frontend/, gateways/ and gatling/ into
# gatebench/_data (gatling/ is already here, its build output left out by setup.py).
COPY setup.py MANIFEST.in ./
COPY backend/ backend/
COPY loadgen/ loadgen/
COPY frontend/ frontend/
COPY gateways/ gateways/
COPY src/ src/
RUN python -m pip install --no-cache-dir --constraint requirements/dev.lock ".[cloud]" \
 && rm -rf build src/*.egg-info

ENTRYPOINT ["gatebench"]
