"""Human labels: annotation queues, labels with their labeller, agreement, labelled sets and judge
calibration."""
