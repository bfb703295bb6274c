"""Production traffic: deployments post their agent's trajectories here; people filter them and make
cases."""
