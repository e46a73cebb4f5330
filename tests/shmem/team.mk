# Tests of teams and team collectives (docs/shmem_teams.md); included from
# shmem/Makefile.include. The Check driver runs mp_shmem_team under oshrun
# (public API only).
if HAVE_CHECK
check_PROGRAMS += tests/check_shmem_team tests/shmem/mp_shmem_team
TESTS += tests/check_shmem_team
tests_check_shmem_team_SOURCES = tests/shmem/check_shmem_team.c
tests_check_shmem_team_CPPFLAGS = $(TEST_CPPFLAGS)
tests_check_shmem_team_LDADD = $(TEST_LDADD)
tests_shmem_mp_shmem_team_SOURCES = tests/shmem/mp_shmem_team.c
tests_shmem_mp_shmem_team_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_shmem_mp_shmem_team_LDADD = librmb.la
tests_shmem_mp_shmem_team_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
