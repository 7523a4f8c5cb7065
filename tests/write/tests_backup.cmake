# Online backup (src/write/backup.c): the copy, re-pinning when files vanish, giving up, and
# crash enumeration on the destination.
og_test(test_write_backup LABELS "write;crash" SOURCES write/test_write_backup.c TIMEOUT 600)
