# .gq mutations through the coordinator: crash enumeration (split in three binaries to keep
# each short) and read-set races (threads and processes).
foreach(grp 1 2 3)
  if(grp EQUAL 1)
    set(_mc_name test_mutate_crash_update)
  elseif(grp EQUAL 2)
    set(_mc_name test_mutate_crash_delete)
  else()
    set(_mc_name test_mutate_crash_cascade)
  endif()
  og_test(${_mc_name} LABELS "write;crash" SOURCES write/test_mutate_crash.c TIMEOUT 900)
  target_compile_definitions(${_mc_name} PRIVATE MUTATE_CRASH_GROUP=${grp})
endforeach()
og_test(test_mutate_race LABELS "write;race;threads" SOURCES write/test_mutate_race.c TIMEOUT 600)
