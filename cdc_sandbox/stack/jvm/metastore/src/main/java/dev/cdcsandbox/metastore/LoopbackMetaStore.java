package dev.cdcsandbox.metastore;

import java.lang.reflect.Field;
import java.lang.reflect.Method;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.RetryingHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf.ConfVars;
import org.apache.hadoop.hive.metastore.security.TUGIContainingTransport;
import org.apache.hadoop.hive.metastore.utils.LogUtils;
import org.apache.hadoop.hive.metastore.utils.SecurityUtils;
import org.apache.thrift.TProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportFactory;

/**
 * The Hive Metastore 3.1 Thrift server on one address: {@code LoopbackMetaStore HOST PORT}.
 *
 * <p>Hive 3.1's {@code HiveMetaStore.startMetaStore} opens its socket through {@code SecurityUtils.getServerSocket}
 * with a null host, the wildcard address, and no setting changes that ({@code metastore.thrift.bind.host} came with
 * Hive 4, whose server Spark 3.5's Hive client cannot talk to). This builds the same plain server (binary protocol,
 * no SASL, TLS or framing: the sandbox configures none) with the host given. The compactor and the other
 * housekeeping threads that {@code main} starts are left out: the sandbox enables none of them.
 */
public final class LoopbackMetaStore {

  public static void main(String[] args) throws Exception {
    if (args.length != 2 || args[0].isBlank()) {
      throw new IllegalArgumentException("usage: LoopbackMetaStore HOST PORT (a blank host would mean every interface)");
    }
    Configuration conf = MetastoreConf.newMetastoreConf();  // metastore-site.xml from the class path
    try {
      LogUtils.initHiveLog4j(conf);
    } catch (LogUtils.LogInitializationException e) {
      System.err.println("Hive's logging set-up: " + e.getMessage());  // the server still runs, as Hive's own does
    }
    for (ConfVars unsupported : new ConfVars[] {ConfVars.USE_THRIFT_SASL, ConfVars.USE_SSL,
        ConfVars.USE_THRIFT_FRAMED_TRANSPORT, ConfVars.USE_THRIFT_COMPACT_PROTOCOL}) {
      if (MetastoreConf.getBoolVar(conf, unsupported)) {
        throw new UnsupportedOperationException(unsupported.getVarname() + " is set: start HiveMetaStore itself");
      }
    }
    // Read by the handler to take each client's address from its connection (the audit log's "ip=").
    Field remote = HiveMetaStore.class.getDeclaredField("isMetaStoreRemote");
    remote.setAccessible(true);
    remote.setBoolean(null, true);

    IHMSHandler handler = RetryingHMSHandler.getProxy(conf,
        new HiveMetaStore.HMSHandler("new db based metaserver", conf, false), false);
    boolean setUgi = MetastoreConf.getBoolVar(conf, ConfVars.EXECUTE_SET_UGI);
    // With set_ugi (the default) clients name their user first and each call runs as that user.
    TProcessor processor = setUgi ? new TUGIBasedProcessor<>(handler) : new TSetIpAddressProcessor<>(handler);
    TTransportFactory transport = setUgi ? new TUGIContainingTransport.Factory() : new TTransportFactory();
    long maxMessage = MetastoreConf.getLongVar(conf, ConfVars.SERVER_MAX_MESSAGE_SIZE);

    TThreadPoolServer.Args server = new TThreadPoolServer.Args(
        SecurityUtils.getServerSocket(args[0], Integer.parseInt(args[1])))  // bound here: a taken port fails now
        .processor(processor)
        .transportFactory(transport)
        .protocolFactory(new TBinaryProtocol.Factory())
        .inputProtocolFactory(new TBinaryProtocol.Factory(true, true, maxMessage, maxMessage))
        .minWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MIN_THREADS))
        .maxWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MAX_THREADS));
    TThreadPoolServer serving = new TThreadPoolServer(server);
    serving.setServerEventHandler(new ReleaseStoreOnClose());
    serving.serve();
  }

  /**
   * When a client disconnects, its worker thread gives back the database session it holds, as the server's own
   * handler does: pool threads outlive connections, and a client gone without `shutdown` would keep its session.
   */
  private static final class ReleaseStoreOnClose implements TServerEventHandler {
    private final Method cleanupRawStore;

    ReleaseStoreOnClose() throws NoSuchMethodException {
      cleanupRawStore = HiveMetaStore.class.getDeclaredMethod("cleanupRawStore");
      cleanupRawStore.setAccessible(true);
    }

    @Override public void preServe() {}

    @Override public ServerContext createContext(TProtocol input, TProtocol output) {
      return null;
    }

    @Override public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {
      try {
        cleanupRawStore.invoke(null);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("HiveMetaStore 3.1.3's cleanupRawStore is missing", e);
      }
    }

    @Override public void processContext(ServerContext context, TTransport input, TTransport output) {}
  }

  private LoopbackMetaStore() {}
}
