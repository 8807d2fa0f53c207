package dev.rediscell;

/** A lease's holder, and how long its lease has left, in the call's unit. */
public record Holder(String holder, long left) {}
