package dev.rediscell;

/** A calendar's unit, in CL.FIXED's period's place: windows from the start of each. */
public enum Calendar {
  DAY,
  WEEK,
  MONTH,
  YEAR
}
