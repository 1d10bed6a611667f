// Package docker is the "docker" runtime: the controller and the brokers
// as containers of one image built locally FROM scratch around the static
// chaos binary, on a private network of their own, started through
// testcontainers-go and driven through the Docker API.
//
// Nothing is pulled (there may be no registry): the image is built with the
// classic builder from a context holding only the binary, under a fixed tag
// that is rebuilt when the binary's hash changes. Ryuk, testcontainers'
// reaper, is not used (it would have to be pulled); the package removes
// what it creates itself: on Close, and, for what a killed tester left
// behind, by a sweep of containers and networks whose owning process is
// gone (every object carries labels naming its run and its owner).
//
// Clients on the host reach brokers through ports bound on 127.0.0.1,
// chosen before the containers start so that each broker advertises its
// host address from the start and keeps it across restarts; brokers reach
// each other and the controller by their network aliases ("broker-2",
// "controller"). Network faults are nftables rules and qdiscs installed in
// the containers' own network namespaces by the same binary run through
// docker exec (package netfault); they match container addresses only, so
// the host's clients are never cut off. On kernels without netem, delays
// are the local runtime's delay line instead: each broker runs under a
// relay (chaos netfault relay) that carries its connections to its peers
// and the controller, chosen at the start (Spec.NetworkFaults) because it
// changes how brokers are started.
package docker
