# p2p tests and sources (owned by the p2p work; included from shmem/Makefile.include)
