package promcollector_test

import (
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/commitlog-go/commitlog"
	"github.com/commitlog-go/commitlog/metrics/promcollector"
)

// Serve a store's metrics at /metrics, as commitlog serve --metrics-addr does.
func ExampleNew() {
	store, err := commitlog.Open("/var/lib/commitlog")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(promcollector.New(store))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	log.Fatal(http.ListenAndServe("127.0.0.1:9308", nil))
}
