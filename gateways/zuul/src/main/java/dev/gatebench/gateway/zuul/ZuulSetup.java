package dev.gatebench.gateway.zuul;

import java.io.IOException;
import java.time.Duration;

import javax.servlet.ServletException;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import com.netflix.zuul.http.ZuulServlet;

import org.apache.coyote.http11.AbstractHttp11Protocol;

import org.springframework.beans.BeansException;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.cloud.commons.httpclient.ApacheHttpClientConnectionManagerFactory;
import org.springframework.cloud.commons.httpclient.ApacheHttpClientFactory;
import org.springframework.cloud.netflix.zuul.filters.ZuulProperties;
import org.springframework.cloud.netflix.zuul.web.ZuulHandlerMapping;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * The generic wiring that makes stock Zuul forward what the client sent, unchanged.
 * Nothing here depends on an API description: that is all in the rendered application.yml.
 */
@Configuration(proxyBeanMethods = false)
public class ZuulSetup {

    @Bean
    public OperationMatchFilter operationMatchFilter(OperationsProperties properties) {
        return new OperationMatchFilter(properties);
    }

    /** Replaces Zuul's SimpleHostRoutingFilter bean (it is conditional on a missing one). */
    @Bean
    public UnchangedForwardingRoutingFilter simpleHostRoutingFilter(ZuulProperties properties,
            ApacheHttpClientConnectionManagerFactory connectionManagerFactory,
            ApacheHttpClientFactory httpClientFactory) {
        return new UnchangedForwardingRoutingFilter(properties, connectionManagerFactory,
                httpClientFactory);
    }

    /**
     * Zuul registers a second servlet at {@code /zuul/*} that strips that prefix; an API with
     * paths under /zuul/ would be rewritten. A disabled registration under the same bean name
     * keeps it out (Zuul's own bean is conditional on that name being free).
     */
    @Bean(name = "zuulServlet")
    public ServletRegistrationBean<ZuulServlet> zuulServlet() {
        ServletRegistrationBean<ZuulServlet> registration =
                new ServletRegistrationBean<>(new ZuulServlet(), "/gatebench-unused-zuul-servlet/*");
        registration.setEnabled(false);
        return registration;
    }

    /**
     * Zuul's handler mapping decides which requests reach Zuul; by default it matches the
     * decoded path without matrix parameters, while the routes are written for the raw path
     * (zuul.decode-url: false, zuul.remove-semicolon-content: false).
     */
    @Bean
    public static BeanPostProcessor rawPathZuulHandlerMapping() {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessBeforeInitialization(Object bean, String beanName)
                    throws BeansException {
                if (bean instanceof ZuulHandlerMapping) {
                    ZuulHandlerMapping mapping = (ZuulHandlerMapping) bean;
                    mapping.setAlwaysUseFullPath(true);
                    mapping.setUrlDecode(false);
                    mapping.setRemoveSemicolonContent(false);
                }
                return bean;
            }
        };
    }

    /**
     * Spring's DispatcherServlet hands TRACE to the handler (Zuul) and then, unless the handler
     * answered with message/http, appends the servlet container's own TRACE echo to the same
     * response. This one only dispatches (Spring Boot's is skipped when this name is taken).
     */
    @Bean(name = "dispatcherServlet")
    public DispatcherServlet dispatcherServlet() {
        return new DispatcherServlet() {
            private static final long serialVersionUID = 1L;

            @Override
            protected void doTrace(HttpServletRequest request, HttpServletResponse response)
                    throws ServletException, IOException {
                processRequest(request, response);
            }
        };
    }

    /**
     * Tomcat: pass %2F through undecoded instead of refusing the request with 400, and let
     * TRACE reach Zuul (an API may route it) instead of answering 405 itself.
     */
    @Bean
    public WebServerFactoryCustomizer<TomcatServletWebServerFactory> rawPathTomcat() {
        return factory -> factory.addConnectorCustomizers(connector -> {
            connector.setEncodedSolidusHandling("passthrough");
            connector.setAllowTrace(true);
        });
    }

    /**
     * Tomcat's keep-alive, as every gateway of a benchmark has it: how long an idle client
     * connection stays open and how many requests it may carry (-1: no limit). Spring Boot 2.3
     * has no property for either; Tomcat's own defaults close a connection after 100 requests.
     */
    @Bean
    public WebServerFactoryCustomizer<TomcatServletWebServerFactory> keepAliveTomcat(
            @Value("${gatebench.tomcat.keep-alive-timeout:60s}") Duration keepAliveTimeout,
            @Value("${gatebench.tomcat.max-keep-alive-requests:100}") int maxKeepAliveRequests) {
        return factory -> factory.addConnectorCustomizers(connector -> {
            if (connector.getProtocolHandler() instanceof AbstractHttp11Protocol) {
                AbstractHttp11Protocol<?> protocol =
                        (AbstractHttp11Protocol<?>) connector.getProtocolHandler();
                protocol.setKeepAliveTimeout((int) keepAliveTimeout.toMillis());
                protocol.setMaxKeepAliveRequests(maxKeepAliveRequests);
            }
        });
    }
}
