"""Pure GPU-job core: the job spec, templates, the phase plan and the run records."""
