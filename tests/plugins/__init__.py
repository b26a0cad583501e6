"""A cloud and a scheduler defined only here, registered at run time: the proof that a new cloud or
scheduler is new files (architecture §11.1). `toy_cloud` is the cloud's profile and catalog part,
`toy_realizer` its realizer in the stack program, `toy_scheduler` the scheduler's plugin."""
