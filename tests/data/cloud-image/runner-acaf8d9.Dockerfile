# cloudbuild/runner.Dockerfile as it was at commit acaf8d9, kept unchanged below this comment so that
# tests/integration/test_runner_image.py can show its two defects (providers mirror before the
# local module is installed; a wheel built without setup.py and the data trees).
# The gatebench runner image: the `gatebench` CLI (ENTRYPOINT), Terraform with the Google
# provider mirrored in (builds need no registry at run time), infra/vms, the gatling/ project
# with its dependencies resolved, a JDK, and the Go backend server. The Cloud Build steps,
# the tester VM and the backend VM all run it. Built and pushed by
# cloudbuild/runner-image.yaml (docs/cloud.md, "Deploy").
FROM golang:1.23.4-bookworm AS backend
COPY backend/ /src/backend/
RUN cd /src/backend && CGO_ENABLED=0 go build -trimpath -o /out/gatebench-backend .

FROM hashicorp/terraform:1.9.8 AS terraform

FROM python:3.12.8-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=terraform /bin/terraform /usr/local/bin/terraform
COPY --from=backend /out/gatebench-backend /usr/local/bin/gatebench-backend
ENV GATEBENCH_BACKEND_BIN=/usr/local/bin/gatebench-backend

WORKDIR /opt/gatebench
COPY pyproject.toml README.md ./
COPY requirements/ requirements/
COPY src/ src/
# Exact versions from the lock; only what the runtime and the cloud extra need.
RUN python -m pip install --no-cache-dir --constraint requirements/dev.lock ".[cloud]"

# The same steps as scripts/setup.d/40-gatling.sh: the test classpath resolved once and the
# generic simulation compiled; gatebench starts java with them (GATEBENCH_GATLING_*).
COPY gatling/ gatling/
RUN mvn -q -B -Dmaven.repo.local=/opt/gatebench/m2 -f gatling/pom.xml dependency:build-classpath \
      -Dmdep.includeScope=test -Dmdep.outputFile=/opt/gatebench/gatling/classpath.txt \
 && mvn -q -B -Dmaven.repo.local=/opt/gatebench/m2 -f gatling/pom.xml test-compile
ENV GATEBENCH_GATLING_CLASSES=/opt/gatebench/gatling/target/test-classes \
    GATEBENCH_GATLING_CP=/opt/gatebench/gatling/classpath.txt

COPY infra/vms/ infra/vms/
RUN terraform -chdir=infra/vms providers mirror /opt/gatebench/terraform-providers \
 && printf 'provider_installation {\n  filesystem_mirror {\n    path = "/opt/gatebench/terraform-providers"\n  }\n}\n' > /opt/gatebench/terraformrc
ENV TF_CLI_CONFIG_FILE=/opt/gatebench/terraformrc TF_IN_AUTOMATION=1

ENTRYPOINT ["gatebench"]
