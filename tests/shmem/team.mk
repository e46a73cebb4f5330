# team tests and sources (owned by the team work; included from shmem/Makefile.include)
