#!/usr/bin/env bash
# The Helm parity sweep: every chart given, with its default values, each of
# its ci/*.yaml values files, the values of each of its helm-unittest tests
# and the pattern ci/*.yaml, through strata's built-in Helm plugin and the
# helm v4.3.1 CLI (built by hack/testbin), compared as Argo CD reads them
# (go doc ./hack/helmparity). Two passes: helm's defaults; then as on a
# cluster (a kube version with a distribution's suffix, its API versions, a
# release name other than the chart's, test hooks skipped, CRDs left out).
# The charts given are also the dependencies of one another (no network).
#
#   hack/helmparity/sweep.sh [-strata BIN] CHARTDIR...
#   make helm-parity CHARTS="$(ls -d /tmp/charts/*/charts/*)"
set -euo pipefail
cd "$(dirname "$0")/../.."
strata=bin/strata
if [[ "${1:-}" == -strata ]]; then
	strata=$2
	shift 2
fi
if [[ $# -eq 0 ]]; then
	echo "usage: $0 [-strata BIN] CHARTDIR..." >&2
	exit 2
fi
helm=$(bash hack/testbin/build.sh helm)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/helmparity" ./hack/helmparity
echo "## pass 1: helm's defaults"
"$bin/helmparity" -helm "$helm" -strata "$strata" -v -unittest -glob "$@"
echo "## pass 2: as on a cluster"
apis=()
for a in monitoring.coreos.com/v1 monitoring.coreos.com/v1/ServiceMonitor monitoring.coreos.com/v1/PodMonitor \
	monitoring.coreos.com/v1/PrometheusRule autoscaling.k8s.io/v1 autoscaling.k8s.io/v1/VerticalPodAutoscaler \
	gateway.networking.k8s.io/v1 gateway.networking.k8s.io/v1/HTTPRoute cert-manager.io/v1 argoproj.io/v1alpha1 \
	keda.sh/v1alpha1 networking.istio.io/v1beta1; do
	apis+=(-api-versions "$a")
done
"$bin/helmparity" -helm "$helm" -strata "$strata" -v -unittest -glob -release rel -namespace apps \
	-kube-version v1.29.3-eks-4f9a2b1 "${apis[@]}" -skip-tests -skip-crds "$@"
