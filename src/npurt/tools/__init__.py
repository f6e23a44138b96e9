"""Developer tools that listen to runtime hooks: the script runner, the sanitizer, the profiler."""
