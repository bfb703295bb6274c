"""The evolution app's writes (docs/architecture.md §1: services write, selectors read), one module
per concern: ``datasets`` (import a set), ``stages`` (start an evolution, open a stage, build its
candidate), ``diagnosis`` (diagnose a stage's failures), ``decisions`` (review its proposals),
``runs`` (evaluation runs: start, score, resume, cancel) and ``chunks`` (their cases in leased
chunks), ``seeding`` (the demo). A stage's decision passes the release gates, so it is a promotion
service: ``studio.promotion``. Import from the module (this package re-exports nothing, so no
import circle runs through it)."""
