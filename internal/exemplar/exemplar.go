package exemplar

import (
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Observe records v in o with the exemplar labels name=value, shortened to fit the
// OpenMetrics limit of 128 runes over every name and value (a longer set would make
// the client library panic). An observer that takes no exemplars gets v alone.
func Observe(o prometheus.Observer, v float64, name, value string) {
	eo, ok := o.(prometheus.ExemplarObserver)
	if !ok {
		o.Observe(v)
		return
	}
	eo.ObserveWithExemplar(v, prometheus.Labels{name: Fit(name, value)})
}

// Fit is value cut, at a rune, so that name and value together are at most
// prometheus.ExemplarMaxRunes long; the end of a name is kept, where names differ
// (namespace/name, a node's suffix).
func Fit(name, value string) string {
	room := prometheus.ExemplarMaxRunes - utf8.RuneCountInString(name)
	if room <= 0 {
		return ""
	}
	n := utf8.RuneCountInString(value)
	if n <= room {
		return value
	}
	r := []rune(value)
	return string(r[n-room:])
}

// OpenMetrics is a controller-runtime metrics server's handler option
// (metricsserver.Options.HandlerOpts) that offers the OpenMetrics format, the only one
// that carries exemplars, to a scraper that asks for it.
func OpenMetrics(o *promhttp.HandlerOpts) { o.EnableOpenMetrics = true }
