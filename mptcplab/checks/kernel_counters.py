"""Every MPTcpExt* and TcpExt* MIB counter name of Linux 6.18, the kernel the project's labs
are written against (labs/selftests: mptcp_join.sh of 6.18.y): what a counter check may name.

Generated, not typed: on this project's host (Linux 6.18.44, 2026-11-29) by
``nstat -az | awk '$1 ~ /^(MPTcpExt|TcpExt)/ {print $1}' | sort`` (76 MPTcpExt, 135 TcpExt;
the same names as /proc/net/netstat's header lines, mptcplab/preflight.counter_names).
tests/unit/test_counter_skip.py checks it against a 6.18 host's /proc/net/netstat when it
runs on one. A name in this list that a kernel lacks (an older kernel: 6.1 has no
MPJoinSynTx*) is "not on this kernel" there, a skipped check; a name in no list, and not
in the running kernel either, is a typo the preflight refuses (mptcplab/checks/counter.py).
"""

from __future__ import annotations

#: the kernel these names were read from
RELEASE = "6.18.44"

MPTCP_EXT: frozenset[str] = frozenset((
    "MPTcpExtAddAddr", "MPTcpExtAddAddrDrop", "MPTcpExtAddAddrTx", "MPTcpExtAddAddrTxDrop", "MPTcpExtBlackhole",
    "MPTcpExtDSSCorruptionFallback", "MPTcpExtDSSCorruptionReset", "MPTcpExtDSSNoMatchTCP", "MPTcpExtDSSNotMatching",
    "MPTcpExtDataCsumErr", "MPTcpExtDssFallback", "MPTcpExtDuplicateData", "MPTcpExtEchoAdd", "MPTcpExtEchoAddTx",
    "MPTcpExtEchoAddTxDrop", "MPTcpExtFallbackFailed", "MPTcpExtInfiniteMapRx", "MPTcpExtInfiniteMapTx",
    "MPTcpExtMD5SigFallback", "MPTcpExtMPCapableACKRX", "MPTcpExtMPCapableDataFallback",
    "MPTcpExtMPCapableEndpAttempt", "MPTcpExtMPCapableFallbackACK", "MPTcpExtMPCapableFallbackSYNACK",
    "MPTcpExtMPCapableSYNACKRX", "MPTcpExtMPCapableSYNRX", "MPTcpExtMPCapableSYNTX",
    "MPTcpExtMPCapableSYNTXDisabled", "MPTcpExtMPCapableSYNTXDrop", "MPTcpExtMPCurrEstab", "MPTcpExtMPFailRx",
    "MPTcpExtMPFailTx", "MPTcpExtMPFallbackTokenInit", "MPTcpExtMPFastcloseRx", "MPTcpExtMPFastcloseTx",
    "MPTcpExtMPJoinAckHMacFailure", "MPTcpExtMPJoinAckRx", "MPTcpExtMPJoinNoTokenFound", "MPTcpExtMPJoinPortAckRx",
    "MPTcpExtMPJoinPortSynAckRx", "MPTcpExtMPJoinPortSynRx", "MPTcpExtMPJoinRejected",
    "MPTcpExtMPJoinSynAckBackupRx", "MPTcpExtMPJoinSynAckHMacFailure", "MPTcpExtMPJoinSynAckRx",
    "MPTcpExtMPJoinSynBackupRx", "MPTcpExtMPJoinSynRx", "MPTcpExtMPJoinSynTx", "MPTcpExtMPJoinSynTxBindErr",
    "MPTcpExtMPJoinSynTxConnectErr", "MPTcpExtMPJoinSynTxCreatSkErr", "MPTcpExtMPPrioRx", "MPTcpExtMPPrioTx",
    "MPTcpExtMPRstRx", "MPTcpExtMPRstTx", "MPTcpExtMPTCPRetrans", "MPTcpExtMismatchPortAckRx",
    "MPTcpExtMismatchPortSynRx", "MPTcpExtNoDSSInWindow", "MPTcpExtOFOMerge", "MPTcpExtOFOQueue",
    "MPTcpExtOFOQueueTail", "MPTcpExtPortAdd", "MPTcpExtRcvWndConflict", "MPTcpExtRcvWndConflictUpdate",
    "MPTcpExtRcvWndShared", "MPTcpExtRmAddr", "MPTcpExtRmAddrDrop", "MPTcpExtRmAddrTx", "MPTcpExtRmAddrTxDrop",
    "MPTcpExtRmSubflow", "MPTcpExtSimultConnectFallback", "MPTcpExtSndWndShared", "MPTcpExtSubflowRecover",
    "MPTcpExtSubflowStale", "MPTcpExtWinProbe",
))

TCP_EXT: frozenset[str] = frozenset((
    "TcpExtArpFilter", "TcpExtBeyondWindow", "TcpExtBusyPollRxPackets", "TcpExtDelayedACKLocked",
    "TcpExtDelayedACKLost", "TcpExtDelayedACKs", "TcpExtEmbryonicRsts", "TcpExtIPReversePathFilter",
    "TcpExtListenDrops", "TcpExtListenOverflows", "TcpExtLockDroppedIcmps", "TcpExtOfoPruned",
    "TcpExtOutOfWindowIcmps", "TcpExtPAWSActive", "TcpExtPAWSEstab", "TcpExtPAWSOldAck", "TcpExtPAWSTimewait",
    "TcpExtPFMemallocDrop", "TcpExtPruneCalled", "TcpExtRcvPruned", "TcpExtSyncookiesFailed", "TcpExtSyncookiesRecv",
    "TcpExtSyncookiesSent", "TcpExtTCPACKSkippedChallenge", "TcpExtTCPACKSkippedFinWait2", "TcpExtTCPACKSkippedPAWS",
    "TcpExtTCPACKSkippedSeq", "TcpExtTCPACKSkippedSynRecv", "TcpExtTCPACKSkippedTimeWait", "TcpExtTCPAOBad",
    "TcpExtTCPAODroppedIcmps", "TcpExtTCPAOGood", "TcpExtTCPAOKeyNotFound", "TcpExtTCPAORequired",
    "TcpExtTCPAbortFailed", "TcpExtTCPAbortOnClose", "TcpExtTCPAbortOnData", "TcpExtTCPAbortOnLinger",
    "TcpExtTCPAbortOnMemory", "TcpExtTCPAbortOnTimeout", "TcpExtTCPAckCompressed", "TcpExtTCPAutoCorking",
    "TcpExtTCPBacklogCoalesce", "TcpExtTCPBacklogDrop", "TcpExtTCPChallengeACK", "TcpExtTCPDSACKIgnoredDubious",
    "TcpExtTCPDSACKIgnoredNoUndo", "TcpExtTCPDSACKIgnoredOld", "TcpExtTCPDSACKOfoRecv", "TcpExtTCPDSACKOfoSent",
    "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKRecvSegs", "TcpExtTCPDSACKUndo",
    "TcpExtTCPDeferAcceptDrop", "TcpExtTCPDelivered", "TcpExtTCPDeliveredCE", "TcpExtTCPFastOpenActive",
    "TcpExtTCPFastOpenActiveFail", "TcpExtTCPFastOpenBlackhole", "TcpExtTCPFastOpenCookieReqd",
    "TcpExtTCPFastOpenListenOverflow", "TcpExtTCPFastOpenPassive", "TcpExtTCPFastOpenPassiveAltKey",
    "TcpExtTCPFastOpenPassiveFail", "TcpExtTCPFastRetrans", "TcpExtTCPFromZeroWindowAdv", "TcpExtTCPFullUndo",
    "TcpExtTCPHPAcks", "TcpExtTCPHPHits", "TcpExtTCPHystartDelayCwnd", "TcpExtTCPHystartDelayDetect",
    "TcpExtTCPHystartTrainCwnd", "TcpExtTCPHystartTrainDetect", "TcpExtTCPKeepAlive", "TcpExtTCPLossFailures",
    "TcpExtTCPLossProbeRecovery", "TcpExtTCPLossProbes", "TcpExtTCPLossUndo", "TcpExtTCPLostRetransmit",
    "TcpExtTCPMD5Failure", "TcpExtTCPMD5NotFound", "TcpExtTCPMD5Unexpected", "TcpExtTCPMTUPFail",
    "TcpExtTCPMTUPSuccess", "TcpExtTCPMemoryPressures", "TcpExtTCPMemoryPressuresChrono",
    "TcpExtTCPMigrateReqFailure", "TcpExtTCPMigrateReqSuccess", "TcpExtTCPMinTTLDrop", "TcpExtTCPOFODrop",
    "TcpExtTCPOFOMerge", "TcpExtTCPOFOQueue", "TcpExtTCPOrigDataSent", "TcpExtTCPPLBRehash", "TcpExtTCPPartialUndo",
    "TcpExtTCPPureAcks", "TcpExtTCPRcvCoalesce", "TcpExtTCPRcvCollapsed", "TcpExtTCPRcvQDrop",
    "TcpExtTCPRenoFailures", "TcpExtTCPRenoRecovery", "TcpExtTCPRenoRecoveryFail", "TcpExtTCPRenoReorder",
    "TcpExtTCPReqQFullDoCookies", "TcpExtTCPReqQFullDrop", "TcpExtTCPRetransFail", "TcpExtTCPSACKDiscard",
    "TcpExtTCPSACKReneging", "TcpExtTCPSACKReorder", "TcpExtTCPSYNChallenge", "TcpExtTCPSackFailures",
    "TcpExtTCPSackMerged", "TcpExtTCPSackRecovery", "TcpExtTCPSackRecoveryFail", "TcpExtTCPSackShiftFallback",
    "TcpExtTCPSackShifted", "TcpExtTCPSlowStartRetrans", "TcpExtTCPSpuriousRTOs", "TcpExtTCPSpuriousRtxHostQueues",
    "TcpExtTCPSynRetrans", "TcpExtTCPTSReorder", "TcpExtTCPTimeWaitOverflow", "TcpExtTCPTimeouts",
    "TcpExtTCPToZeroWindowAdv", "TcpExtTCPWantZeroWindowAdv", "TcpExtTCPWinProbe", "TcpExtTCPWqueueTooBig",
    "TcpExtTCPZeroWindowDrop", "TcpExtTSEcrRejected", "TcpExtTW", "TcpExtTWKilled", "TcpExtTWRecycled",
    "TcpExtTcpDuplicateDataRehash", "TcpExtTcpTimeoutRehash",
))

KNOWN: frozenset[str] = MPTCP_EXT | TCP_EXT
