"""What tests use to look at and steer a running cluster: views of groups, wait
conditions, the clock control and the cluster-level actions behind ``FakeCluster``."""
