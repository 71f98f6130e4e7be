package monitoring

// PrometheusVersion is the Prometheus release the lab runs and the tests' promtool is
// (make prometheus-binaries builds both from source into bin/prometheus/<version>; the
// Makefile reads the version from here).
const PrometheusVersion = "v0.316.0"
