"""Model endpoints: the registry of policies the studio can run (never holding a key)."""
